"""``electa orgs``, ``electa keys``, ``electa tokens``: organisations, scoped API keys, signing
secrets and visitor tokens, straight on the data directory (no admin token or server needed;
a running server sees the change on its next request)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import click

from electa.auth.keys import parse_duration
from electa.auth.scopes import Scope
from electa.auth.tokens import sign_visitor_token
from electa.cli.common import echo_json, friendly, table
from electa.config import Settings
from electa.errors import ConfigError
from electa.legs.dense_readings import BY_LANGUAGE, READINGS
from electa.stores.protocol import Store

F = TypeVar("F", bound=Callable[..., Any])


def store_option(f: F) -> F:
    return click.option("--data", "data_dir", type=click.Path(file_okay=False), default=None,  # type: ignore[return-value]
                        help="Data directory (default: $ELECTA_DATA_DIR or ./electa-data).")(f)


def open_store(data_dir: str | None) -> Store:
    from electa.stores.registry import open_store as open_configured

    return open_configured(Settings(), data_dir)


def when(ts: object) -> str:
    return "-" if ts is None else time.strftime("%Y-%m-%d %H:%M", time.gmtime(float(ts)))  # type: ignore[arg-type]


@click.group()
def orgs() -> None:
    """Create organisations; rotate an organisation's visitor-token signing secret."""


@orgs.command("create")
@click.argument("name")
@store_option
@friendly
def orgs_create(name: str, data_dir: str | None) -> None:
    store = open_store(data_dir)
    store.add_organisation(name)
    click.echo(f"organisation {name} ready; next: electa keys create --org {name} --scope admin|ingest|search")


@orgs.command("list")
@store_option
@friendly
def orgs_list(data_dir: str | None) -> None:
    for name in open_store(data_dir).organisations():
        click.echo(name)


@orgs.command("rotate-secret")
@click.argument("name")
@store_option
@friendly
def orgs_rotate_secret(name: str, data_dir: str | None) -> None:
    """A new signing secret for NAME's visitor tokens (shown once); tokens signed with the old one stop working."""
    click.echo(open_store(data_dir).rotate_signing_secret(name))
    click.echo("shown once; keep it in your backend only (it signs visitor tokens)", err=True)


@orgs.command("dense")
@click.argument("name")
@click.argument("reading", required=False, type=click.Choice(list(READINGS)))
@store_option
@friendly
def orgs_dense(name: str, reading: str | None, data_dir: str | None) -> None:
    """Show or set which model reads NAME's units and questions: by-question (a new
    organisation's default, ELECTA_DENSE_READING: each unit read by its language's model and by
    USE multilingual; a question in a language NAME writes in is read by-language, one in
    another language by USE: an English help center's German visitors), by-language (MiniLM for
    English, multilingual-e5-small for the rest; organisations that wrote before the default
    changed keep it) or multilingual (USE for all; one space in which a question best meets
    pages of other languages, at a cost to each language's own pages)."""
    from electa.cli.common import open_engine

    if reading is None:  # (the store alone: no model to load)
        store = open_store(data_dir)
        try:
            stored = (store.org_settings().get(name) or {}).get("dense")
            new = Settings().dense_reading
            if stored is None and not store.has_sources(name) and new != BY_LANGUAGE:
                click.echo(f"{name}: {new} from its first write, under the embedder chain with USE"
                           f" (else {BY_LANGUAGE})")
            else:
                click.echo(f"{name}: {stored or BY_LANGUAGE}")
        finally:
            store.shutdown()
        return
    with open_engine(data_dir, None, searches=False) as engine:
        done = engine.set_dense_reading(name, reading, progress=True)
    click.echo(f"{name}: {reading} ({done} units embedded by the multilingual model, USE)" if done else f"{name}: {reading}")


@click.group()
def keys() -> None:
    """Create, list and revoke an organisation's API keys."""


@keys.command("create")
@click.option("--org", required=True)
@click.option("--scope", required=True, type=click.Choice([s.value for s in Scope]),
              help="search: browser-safe (search, ask, feedback); ingest: the org's backend; admin: also manages keys.")
@click.option("--name", default="", help="A label for listings.")
@click.option("--expires-in", default=None, help="Lifetime: 90s, 15m, 12h, 30d, 2w (default: never).")
@store_option
@click.option("--json", "as_json", is_flag=True)
@friendly
def keys_create(org: str, scope: str, name: str, expires_in: str | None, data_dir: str | None, as_json: bool) -> None:
    now = time.time()
    expires = now + parse_duration(expires_in) if expires_in else None
    key, record = open_store(data_dir).add_api_key(org, Scope(scope), name, expires)
    if as_json:
        echo_json({**record.public(now), "key": key})
        return
    click.echo(key)
    click.echo(f"{scope} key {record.id} of {org}, expires {when(expires) if expires else 'never'};"
               " shown once (only its hash is stored)", err=True)


@keys.command("list")
@click.option("--org", required=True)
@store_option
@click.option("--json", "as_json", is_flag=True)
@friendly
def keys_list(org: str, data_dir: str | None, as_json: bool) -> None:
    now = time.time()
    rows = [r.public(now) for r in open_store(data_dir).api_keys(org)]
    if as_json:
        echo_json(rows)
        return
    click.echo(table([[str(r["id"]), str(r["prefix"]) + "…", str(r["scope"]), str(r["name"]), when(r["created_at"]),
                       when(r["expires_at"]), str(r["status"])] for r in rows],
                     ["id", "prefix", "scope", "name", "created", "expires", "status"]))


@keys.command("revoke")
@click.argument("key_id", type=int)
@click.option("--org", required=True)
@store_option
@friendly
def keys_revoke(key_id: int, org: str, data_dir: str | None) -> None:
    """Revoke key KEY_ID (from `keys list`); it fails on its next request."""
    record = open_store(data_dir).revoke_api_key(org, key_id)
    click.echo(f"revoked {record.scope.value} key {record.id} ({record.prefix}…) of {org}")


@click.group()
def tokens() -> None:
    """Sign visitor tokens (what an organisation's backend does for its widget)."""


@tokens.command("sign")
@click.option("--org", required=True)
@click.option("--sub", required=True, help="Who the visitor is (a user id).")
@click.option("--principal", "principals", multiple=True, help="A principal the visitor holds (team:support); repeatable.")
@click.option("--ttl", default="15m", show_default=True, help="Lifetime: 90s, 15m, 12h.")
@click.option("--agent", default=None, help="Restrict the token to this agent.")
@click.option("--secret", default=None, help="The organisation's signing secret (default: read it from --data).")
@store_option
@friendly
def tokens_sign(org: str, sub: str, principals: tuple[str, ...], ttl: str, agent: str | None, secret: str | None,
                data_dir: str | None) -> None:
    if secret is None:
        secret = open_store(data_dir).signing_secret(org)
        if secret is None:
            raise ConfigError(f"organisation {org!r} has no signing secret; run `electa orgs rotate-secret {org}`")
    click.echo(sign_visitor_token(secret, org, sub, list(principals), parse_duration(ttl), agent=agent))
