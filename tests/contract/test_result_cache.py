import pytest

from electa.api.cache import Cache, ResultCache
from electa.testing.cache_contract import CacheContract


class TestResultCache(CacheContract):
    @pytest.fixture
    def cache(self) -> Cache:
        return ResultCache(ttl_s=0.2)


def test_the_in_process_cache_forgets_the_oldest_past_its_size() -> None:
    cache = ResultCache(ttl_s=60, max_entries=2)
    for i in range(3):
        cache.put(("k", i), i)
    assert [cache.get(("k", i)) for i in range(3)] == [None, 1, 2]
