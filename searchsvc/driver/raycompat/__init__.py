"""Every use of Ray's private names, in one package, behind public names the rest of searchsvc
uses. Ray Tune offers no public hooks for what searchsvc's schedulers need (PBT exploiting within a
scientific arm, each exploit reported; early stopping is searchsvc's own scheduler and needs
none), so these adapters reach into its internals, and this is the one place to check when
Ray changes.

Checked against Ray ``RAY_VERSIONS`` (pyproject pins the same range); ``tests/driver/
test_raycompat.py`` checks that every private name below still exists in the installed Ray, and
``tests/test_architecture.py`` that no other module touches a Ray private name.
"""

from __future__ import annotations

from searchsvc.driver.raycompat.controller import (
    ENCODER_NOTE,
    actor_key,
    actor_node_id,
    forget_ended_trials,
    trials_restore_from_their_checkpoint,
    waiting_trials,
)
from searchsvc.driver.raycompat.gcs import gcs_problem
from searchsvc.driver.raycompat.node import lean_node, tag_callbacks_without_integrations
from searchsvc.driver.raycompat.population import PBT, PopulationHooks
from searchsvc.driver.raycompat.workers import (
    keep_workers_for,
    release_cached_workers_while,
    start_unresettable_trials_afresh,
    trainables_inherit_node_environment,
)

RAY_VERSIONS = ">=2.60,<2.61"

# (owner, private attribute) pairs this module relies on; checked by the tests.
PRIVATE_NAMES: tuple[tuple[str, str], ...] = (
    ("PopulationBasedTraining", "_trial_state"), ("PopulationBasedTraining", "_quantiles"),
    ("PopulationBasedTraining", "_checkpoint_or_exploit"),
    ("PopulationBasedTraining", "_get_new_config"), ("PopulationBasedTraining", "_exploit"),
    ("TrialRunnerWrapper", "_tune_controller"),
    ("TuneController", "_cached_trial_decisions"), ("TuneController", "_on_trial_reset"),
    ("TuneController", "_resetting_trials"), ("TuneController", "_trial_to_actor"),
    ("TuneController", "_actor_to_trial"), ("TuneController", "_remove_actor"),
    ("TuneController", "_schedule_trial_actor"), ("TuneController", "_trials"),
    ("TuneController", "_stopped_trials"), ("TuneController", "_failed_trials"),
    ("TuneController", "_trial_metadata"), ("TuneController", "_trials_to_cache"),
    ("TuneController", "_class_cache"), ("TuneController", "_cleanup_cached_actors"),
    ("TuneController", "_maybe_update_trial_queue"), ("TuneController", "_update_trial_queue"),
    ("TuneController", "_search_alg"),
    ("ray.util.debug", "_logged"),
    ("Trial", "_restore_checkpoint_result"),
    ("ray.train._internal.session", "_TrainingResult"),
    ("ray.tune.execution.class_cache", "_ActorClassCache"),
    ("_ActorClassCache", "_cache"),
    ("ActorHandle", "_actor_id"),
    ("ray._private", "state"), ("ray.air._internal.usage", "tag_callbacks"),
    ("ray.air._internal.usage", "record_extra_usage_tag"), ("ray.air._internal.usage", "TagKey"),
    ("ray._private.parameter", "RayParams"), ("ray._raylet", "InnerGcsClient"),
    ("InnerGcsClient", "standalone"),
    ("RayParams", "no_monitor"), ("RayParams", "include_log_monitor"),
    ("ray._private.node", "Node"), ("Node", "start_api_server"),
    ("TuneController", "_maybe_cache_trial_actor"), ("TuneController", "_actor_cache"),
    ("ray.tune.utils.object_cache", "_ObjectCache"), ("_ObjectCache", "_cached_objects"),
    ("_ObjectCache", "_num_cached_objects"), ("_ObjectCache", "_max_num_objects"),
)

__all__ = ["ENCODER_NOTE", "PBT", "PRIVATE_NAMES", "RAY_VERSIONS", "PopulationHooks",
           "actor_key", "actor_node_id", "forget_ended_trials", "gcs_problem",
           "keep_workers_for", "lean_node",
           "release_cached_workers_while", "start_unresettable_trials_afresh",
           "tag_callbacks_without_integrations", "trainables_inherit_node_environment",
           "trials_restore_from_their_checkpoint", "waiting_trials"]
