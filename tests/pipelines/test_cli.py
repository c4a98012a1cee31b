"""`radar`'s global options (--conf, --data-dir, --jars-dir) work before and after the command's name."""

from __future__ import annotations

import pytest

from rebalance_radar.pipelines.cli import build_parser


@pytest.mark.parametrize(
    "argv",
    [
        ["--data-dir", "D", "--conf", "c.yml", "--jars-dir", "J", "replay", "--input", "x"],
        ["replay", "--input", "x", "--data-dir", "D", "--conf", "c.yml", "--jars-dir", "J"],
        ["--conf", "c.yml", "replay", "--data-dir", "D", "--input", "x", "--jars-dir", "J"],
    ],
)
def test_global_options_before_or_after_the_command(argv: list[str]) -> None:
    args = build_parser().parse_args(argv)
    assert (args.command, args.input, args.data_dir, args.conf, args.jars_dir) == ("replay", ["x"], "D", "c.yml", "J")


def test_global_options_keep_their_defaults_and_the_later_one_wins() -> None:
    parser = build_parser()
    args = parser.parse_args(["sql", "SELECT 1"])
    assert (args.conf, args.data_dir, args.jars_dir) == ("conf/local.yml", None, None)
    args = parser.parse_args(["--data-dir", "before", "run", "--data-dir", "after"])
    assert args.data_dir == "after"
    for command in (["decode", "--input", "x"], ["jars"], ["capture", "--topic", "t", "--out", "o"]):
        assert build_parser().parse_args([*command, "--data-dir", "D"]).data_dir == "D"


# `radar replay --input X --data-dir D` as users type it, writing under D: test_cli_faults' `replayed_data_dir` (in
# this process) and test_data_dirs' `test_replay_works_with_a_broken_python3_first_on_path` (the console script).
