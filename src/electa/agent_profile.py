"""What `electa tune --agent` stored for an agent, as a search reads it: its fusion settings,
calibrators, the floor on the calibrated score and the reranker's cut, each used only where it
was fitted on the scores this engine gives, and a warning (once per agent and cause) where the
tune was fitted on another served order than a search now reads.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from electa.calibration import Calibrator
from electa.config import Settings
from electa.errors import ConfigError
from electa.ingest.chunker import CHUNKER_VERSION
from electa.ingest.unit_vectors import Recipe
from electa.judges.rerank_cut import RerankCut
from electa.legs.runner import DEFAULT_DEPTH
from electa.served_order import RANK_RULES
from electa.text.analysis import ANALYSIS
from electa.types import Caller

# (the engine's logger: what an operator reads of a search's agent, where the search logs)
log = logging.getLogger("electa.engine")


class AgentProfiles:
    """Agents' stored tunings read for ``settings`` and ``recipe`` (how this engine makes unit
    vectors), checked against ``dense_model_id(org)`` (the model whose scores an organisation's
    dense leg gives). :attr:`said` holds what was warned of, so each cause is said once."""

    def __init__(self, settings: Settings, recipe: Recipe, dense_model_id: Callable[[str], str | None]) -> None:
        self.settings, self.recipe, self.dense_model_id = settings, recipe, dense_model_id
        self.said: set[tuple[str, str, str]] = set()  # (org, agent, cause)

    def _once(self, said: tuple[str, str, str], message: str, *args: object) -> None:
        if said not in self.said:
            self.said.add(said)
            log.warning(message, *args, stacklevel=2)  # (the record names the line that said it)

    def read(self, caller: Caller, stored: Mapping[str, object] | None) -> dict[str, Any]:
        """What `electa tune --agent` stored for this agent: fusion settings (request values
        win), calibrators and the floor on the calibrated score. ``stored`` is the agent's
        settings as the search read them (so a cache key made from that read matches what the
        search used)."""
        if caller.agent is None or not stored:
            return {}
        model = self.dense_model_id(caller.org)
        if stored.get("model_id") not in (None, model):
            # Tuned for another vector space: its calibration means nothing here.
            self._once((caller.org, caller.agent, str(stored.get("model_id"))),
                       "agent %s/%s was tuned on the scores of %s, not of this engine's %s: its tuning is not"
                       " used until `electa tune --agent` runs again", caller.org, caller.agent,
                       stored.get("model_id"), model)
            return {}
        if stored.get("chunker", CHUNKER_VERSION) != CHUNKER_VERSION:
            return {}  # tuned on other units (their scores differ): tune again
        if stored.get("unit_vectors", Recipe.ENCODED.value) != self.recipe.value and "calibration" in stored:
            # Calibrated on vectors made by another recipe (before issue 12 item 7 every unit was
            # read by the model): their cosines differ, so the calibration is not used; tune again.
            log.warning("agent %s/%s was calibrated for %s unit vectors, this engine makes %s ones: its calibration"
                        " is not used until `electa tune --agent` runs again", caller.org, caller.agent,
                        stored.get("unit_vectors", Recipe.ENCODED.value), self.recipe.value)
            stored = {k: v for k, v in stored.items() if k not in ("calibration", "calibrated_floor", "rerank_cut")}
        profile: dict[str, Any] = {"fusion": stored.get("fusion") or {}}
        self._say_stale_tuning(caller, stored, profile["fusion"])
        calibration = stored.get("calibration")
        if isinstance(calibration, dict) and calibration:
            try:
                profile["calibrators"] = {leg: Calibrator.from_dict(c) for leg, c in calibration.items()}
                profile["calibrated_floor"] = float(stored.get("calibrated_floor", 0.5))  # type: ignore[arg-type]
            except (ValueError, TypeError) as exc:  # the absolute floor decides, as before a tune
                profile.pop("calibrators", None)
                self._once((caller.org, caller.agent, "calibration"),
                           "agent %s/%s: its stored calibration is unreadable (%s): the absolute floor decides"
                           " until `electa tune --agent` runs again", caller.org, caller.agent, exc)
        if stored.get("rerank_cut") is not None:
            try:
                profile["rerank_cut"] = RerankCut.from_dict(stored["rerank_cut"])
            except ConfigError as exc:  # the legs' cut stands
                self._once((caller.org, caller.agent, "rerank_cut"), "agent %s/%s: %s", caller.org, caller.agent, exc)
        return profile

    def _say_stale_tuning(self, caller: Caller, stored: Mapping[str, object], fusion: object) -> None:
        """Warn (once per agent and cause) when the agent's tune was fitted on another served
        order than a search now reads: one ranked by earlier rules (``tuned_on.rank_rules``, not
        :data:`RANK_RULES`; a tune before rules 4 recorded none), full-text scores of another
        analysis (``tuned_on.analysis``, not :data:`electa.text.analysis.ANALYSIS`: a store's
        terms changed under it; a tune before a4 recorded none), or a leg its tuned fusion does
        not name served at another depth than its tune read (``tuned_on.served_depths``). Its
        fusion, calibrators, floor and reranker's cut were fitted on those hits; they are still
        used, as they are close; `electa tune --agent` fits them again."""
        tuned_on = stored.get("tuned_on")
        if isinstance(tuned_on, dict):
            # (a tune before a4 recorded no analysis: its full-text scores were read by a3 or earlier)
            for recorded, now, what in ((tuned_on.get("analysis", "a3 or earlier"), ANALYSIS,
                                         "full-text scores of another analysis"),
                                        (tuned_on.get("rank_rules", "before 4"), RANK_RULES,
                                         "the order of earlier ranking rules")):
                if recorded != now:
                    self._once((caller.org, caller.agent or "", f"{what} {recorded}"),
                               "agent %s/%s was tuned on %s (%s, now %s): its fusion, calibration and cuts are used"
                               " as they are until `electa tune --agent` runs again", caller.org, caller.agent,
                               what, recorded, now)
        served = tuned_on.get("served_depths") if isinstance(tuned_on, dict) else None
        if not isinstance(served, dict) or not any(k in stored for k in ("calibration", "rerank_cut")):
            return
        named = fusion.get("depths") if isinstance(fusion, dict) else None
        named = named if isinstance(named, dict) else {}
        depths = self.settings.depths
        moved = {leg: (depth, depths.get(leg, DEFAULT_DEPTH)) for leg, depth in served.items()
                 if leg not in named and depths.get(leg, DEFAULT_DEPTH) != depth}
        if moved:
            self._once((caller.org, caller.agent or "", "depths " + repr(sorted(moved.items()))),
                       "agent %s/%s was calibrated on hits served at %s; this server serves %s: its calibration"
                       " reads other hits until `electa tune --agent` runs again", caller.org, caller.agent,
                       ", ".join(f"{leg} {was}" for leg, (was, _) in sorted(moved.items())),
                       ", ".join(f"{leg} {now}" for leg, (_, now) in sorted(moved.items())))
