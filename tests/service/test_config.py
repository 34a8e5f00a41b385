"""What `searchsvc serve` may be told: the per-study limits, each within what searchsvc itself
accepts, checked before the server opens its store."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchsvc.cli import main
from searchsvc.errors import UsageError
from searchsvc.service.config import SERVER_LIMITS, server_limits
from searchsvc.spec import DEFAULT_LIMITS


def test_given_limits_replace_the_servers_defaults_and_the_rest_stay() -> None:
    limits = server_limits(max_trials=50, max_parameters=None, max_grid_points=None,
                           max_arms=7)
    assert (limits.max_trials, limits.max_arms) == (50, 7)
    assert limits.max_parameters == SERVER_LIMITS.max_parameters
    assert limits.max_grid_points == SERVER_LIMITS.max_grid_points


@pytest.mark.parametrize("value", [0, DEFAULT_LIMITS.max_trials + 1])
def test_a_limit_outside_searchsvcs_own_is_refused_naming_the_option(value: int) -> None:
    with pytest.raises(UsageError) as caught:
        server_limits(max_trials=value)
    assert str(caught.value) == (f"--max-trials must be between 1 and "
                                 f"{DEFAULT_LIMITS.max_trials} (got {value})")
    assert caught.value.exit_code == 2


def test_serve_exits_2_on_a_bad_limit_before_opening_its_store(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "never.db"
    assert main(["serve", "--storage", f"sqlite:///{db}", "--max-arms", "0"]) == 2
    assert "--max-arms must be between 1 and" in capsys.readouterr().err
    assert not db.exists()
