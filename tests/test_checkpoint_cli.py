"""Where a local `jmsbridge job` keeps its checkpoints, and `reset-checkpoint`'s arguments."""

from __future__ import annotations

from pathlib import Path

import pytest

from jmsbridge.cli import parser
from jmsbridge.job_cli import local_checkpoints


def test_a_local_run_keeps_its_checkpoints_next_to_its_config_or_in_its_work_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    config = tmp_path / "conf" / "bridge.yaml"
    args = parser().parse_args(["job", "-f", str(config)])
    assert local_checkpoints(args) == tmp_path / "conf" / "checkpoints"
    args = parser().parse_args(["job", "-f", str(config), "--work-dir", str(tmp_path / "w")])
    assert local_checkpoints(args) == tmp_path / "w" / "checkpoints"
    args = parser().parse_args(["job", "-f", str(config), "--checkpoint", str(tmp_path / "c")])
    assert local_checkpoints(args) is None  # the given one
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "1234")  # spark-submit: spark.checkpoint.path
    assert local_checkpoints(parser().parse_args(["job", "-f", str(config)])) is None


def test_reset_checkpoint_asks_for_a_position() -> None:
    args = parser().parse_args(["reset-checkpoint", "-f", "b.yaml", "--to", "committed"])
    assert args.position == "committed" and args.checkpoint is None
    with pytest.raises(SystemExit):
        parser().parse_args(["reset-checkpoint", "-f", "b.yaml", "--to", "somewhere"])
