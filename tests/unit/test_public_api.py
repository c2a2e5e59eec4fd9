import electa


def test_all_names_exist_and_are_sorted() -> None:
    assert electa.__all__ == sorted(electa.__all__)
    for name in electa.__all__:
        assert hasattr(electa, name), name


def test_error_tree_has_one_root() -> None:
    for name in ("ConfigError", "IngestError", "StoreError", "ModelMismatchError", "EmbedderUnavailable",
                 "NotFoundError", "UnsupportedFormat"):
        assert issubclass(getattr(electa, name), electa.ElectaError)


def test_unknown_names_list_the_valid_ones() -> None:
    import pytest

    from electa.embedders import create_embedder

    with pytest.raises(electa.ConfigError, match="hash, minilm"):
        create_embedder("bge-m3")
