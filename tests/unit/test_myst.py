"""MyST Markdown (pip's documentation, Jupyter Book): roles, targets, comments and directives
read as Sphinx shows them (electa.text.myst)."""

from __future__ import annotations

from electa.ingest.loaders import loader_for
from electa.ingest.page import Loaded
from electa.text.myst import MAX_DEPTH, read_myst

PIP_PAGE = """\
# Installation

(upgrading-pip)=

## Upgrading `pip`

Upgrade your `pip` by running, as {ref}`the user guide <user-guide>` and {pep}`668` say:

```{pip-cli}
$ pip install --upgrade pip
```

% maintainers: keep this in step with get-pip
```{note}
:class: tip
Environment variables set to an empty string will **not** be treated as false.
```

```{toctree}
:maxdepth: 2
cli/index
```

```{include} ../../NEWS.rst
```

Write {file}`pip.conf` as `{file}` shows it.
"""


def _read(text: str, name: str = "installation.md") -> Loaded:
    return loader_for(name)(name, text.encode())


def test_a_myst_page_reads_as_sphinx_shows_it() -> None:
    """pip's pages were read as written: "(compatibility-requirements)=" and "{any}`--no-deps`"
    were quoted in answers, and a note's text was code no answer could quote."""
    loaded = _read(PIP_PAGE)
    (section,) = [s for s in loaded.documents[0].sections if s.path == ("Upgrading `pip`",)]
    text = section.text
    assert "as the user guide and PEP 668 say:" in text
    assert "```{pip-cli}\n$ pip install --upgrade pip\n```" in text  # (a directive of its own: the command as written)
    assert "Environment variables set to an empty string will **not** be treated as false." in text
    assert "```{note}" not in text and ":class:" not in text
    assert "upgrading-pip" not in text and "maintainers" not in text  # (a target, a comment)
    assert "maxdepth" not in text and "cli/index" not in text  # (the toctree)
    assert "Write `pip.conf` as `{file}` shows it." in text  # (a role written as code stays code)
    assert loaded.note == "not read: 1 include"


def test_a_plain_markdown_page_is_left_as_written() -> None:
    """No mark of MyST, nothing read otherwise: R Markdown's "{r}" is code, "% of seats" is text."""
    page = "# Seats\n\n% of seats used is shown monthly.\n\n```{r}\nplot(seats)\n```\n\nUse `{x}` for a name.\n"
    assert read_myst(page) == (page, {})
    assert "% of seats used is shown monthly." in _read(page, "seats.md").documents[0].sections[0].text


def test_tabs_code_blocks_versions_and_rst_inside() -> None:
    page = """\
(setup)=
# Setup

````{tab} Unix/macOS
```{code-block} shell
:caption: the command
python -m pip install x
```
````

:::{dropdown} Why a virtual environment?
It keeps {py:class}`~venv.EnvBuilder` apart.
:::

```{versionadded} 8.0
Hash-checking mode.
```

```{eval-rst}
.. note:: Read :ref:`the guide <guide>` first.
```
"""
    text, dropped = read_myst(page)
    assert not dropped
    lines = [x for x in text.split("\n") if x.strip()]
    assert lines == ["# Setup", "Unix/macOS", "the command", "```shell", "python -m pip install x", "```",
                     "Why a virtual environment?", "It keeps `EnvBuilder` apart.", "New in version 8.0:",
                     "Hash-checking mode.", "Read the guide first."]


def test_a_directive_nested_past_the_limit_is_read_as_text() -> None:
    """A hostile page: thousands of unclosed directive fences are read a bounded number of levels
    deep (no recursion past MAX_DEPTH), and their text is still there."""
    page = "".join(f"{':' * 3}{{note}} level {n}\n" for n in range(3000)) + "The end.\n"
    text, _ = read_myst(page)
    assert "level 0" in text and "level 2999" in text and text.rstrip().endswith("The end.")
    assert text.count("{note}") == 3000 - MAX_DEPTH
