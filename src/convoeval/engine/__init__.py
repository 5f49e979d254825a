"""Engine: the response cache, the run store, the run meter, the run options and recorder, the
target pool shared by run and arena, and the local runner (`execute_run`). The HTTP client,
limits and prices live in `convoeval.targets`."""

from ._cache import CACHE_FILE, CachedTarget, ResponseCache, cache_key, target_identity
from ._events import CallbackEvents, RunEvents
from ._meter import CallTotals, MeteredTarget, RunMeter
from ._options import RUN_SHAPING, RecordedOptions, RunOptions, SharedOptions, TargetLike, checked_target
from ._pool import LOCAL_NOTE, JudgeChoice, TargetPool, local_model_available, named_targets
from ._recorder import RunRecorder, suite_key
from ._runner import RunReport, execute_run
from ._sqlite import StoreError, unreadable
from ._store import HOME_ENV, STORE_FILE, ResultKey, RunRecord, RunStore, StoredResults, state_dir

__all__ = [
    "CACHE_FILE",
    "HOME_ENV",
    "LOCAL_NOTE",
    "RUN_SHAPING",
    "STORE_FILE",
    "CachedTarget",
    "CallTotals",
    "CallbackEvents",
    "JudgeChoice",
    "MeteredTarget",
    "ResponseCache",
    "ResultKey",
    "RunMeter",
    "RecordedOptions",
    "RunEvents",
    "RunOptions",
    "RunRecord",
    "RunRecorder",
    "RunReport",
    "RunStore",
    "SharedOptions",
    "StoreError",
    "StoredResults",
    "TargetLike",
    "TargetPool",
    "cache_key",
    "checked_target",
    "execute_run",
    "local_model_available",
    "named_targets",
    "state_dir",
    "suite_key",
    "target_identity",
    "unreadable",
]
