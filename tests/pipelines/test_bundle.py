"""The Databricks bundle, checked without the Databricks CLI (it cannot be installed here): databricks.yml and every
included resource file load through the `databricks-bundles` package's resource classes (unknown fields and wrong
enum values are errors there), `${...}` references resolve for every target, and every wheel task's entry point
and parameters are checked against the real `radar` console script and argument parser. A broken entry point or
an unknown option fails here, not at 3 a.m. on the cluster."""

from __future__ import annotations

import contextlib
import copy
import fnmatch
import glob
import io
import json
import re
import shutil
import subprocess
import sys
import time
import tomllib
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from databricks.bundles.dashboards import Dashboard
from databricks.bundles.jobs import Job
from databricks.bundles.volumes import Volume

from rebalance_radar.pipelines.cli import build_parser
from rebalance_radar.pipelines.cli.oncall_queries import dashboard_json, oncall_queries
from rebalance_radar.pipelines.config import load_config

REPO = Path(__file__).resolve().parents[2]
# What `databricks bundle deploy --var ...` must be given (no default, no lookup): stand-ins for the check.
SUPPLIED_VARIABLES = {"kafka_bootstrap_servers": "broker-1.example:9093,broker-2.example:9093"}
LOOKED_UP = "<resolved by the Databricks CLI at deploy>"
# Top-level keys of a bundle configuration (the Databricks CLI's bundle schema) and the resource types used here.
BUNDLE_KEYS = {
    "bundle", "include", "artifacts", "variables", "targets", "resources", "workspace", "sync", "permissions",
    "run_as", "presets", "experimental", "python", "scripts", "git",
}  # fmt: skip
RESOURCE_CLASSES = {"jobs": Job, "dashboards": Dashboard, "volumes": Volume}
# The commands the jobs must run: ingest + detection, the expectations, table maintenance.
EXPECTED_COMMANDS = {"radar_run": "run", "radar_check": "check", "radar_maintain": "maintain"}
REFERENCE = re.compile(r"\$\{([^}]+)\}")


@dataclass(frozen=True)
class Bundle:
    """A bundle as the CLI sees it: the root file, and each resource with the file that declared it."""

    root: Path
    config: dict[str, Any]
    resources: dict[str, dict[str, tuple[Path, dict[str, Any]]]]  # type -> name -> (file, definition)


def load_bundle(root: Path) -> Bundle:
    config = yaml.safe_load((root / "databricks.yml").read_text())
    resources: dict[str, dict[str, tuple[Path, dict[str, Any]]]] = {}
    files = [root / "databricks.yml"]
    for pattern in config.get("include", []):
        files += [Path(p) for p in sorted(glob.glob(str(root / pattern)))]
    for path in files:
        loaded = yaml.safe_load(path.read_text()) or {}
        for kind, named in (loaded.get("resources") or {}).items():
            for name, definition in named.items():
                assert name not in resources.get(kind, {}), f"{kind}.{name} is declared twice"
                resources.setdefault(kind, {})[name] = (path, definition)
    return Bundle(root, config, resources)


def target_variables(bundle: Bundle, target: str) -> dict[str, Any]:
    """Every variable's value in `target`: the target's value, else the default, else a lookup, else --var."""
    declared = bundle.config.get("variables", {})
    chosen = (bundle.config["targets"][target] or {}).get("variables", {})
    unknown = set(chosen) - set(declared)
    assert not unknown, f"target {target} sets undeclared variables {unknown}"
    values = {}
    for name, spec in declared.items():
        if name in chosen:
            values[name] = chosen[name]
        elif "default" in spec:
            values[name] = spec["default"]
        elif "lookup" in spec:
            values[name] = LOOKED_UP
        else:
            assert name in SUPPLIED_VARIABLES, f"variable {name} has no value in target {target}"
            values[name] = SUPPLIED_VARIABLES[name]
    return values


def resolve(value: Any, references: Mapping[str, Any]) -> Any:
    """`value` with every `${...}` replaced; an unknown reference fails, naming it."""
    if isinstance(value, dict):
        return {k: resolve(v, references) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, references) for v in value]
    if not isinstance(value, str):
        return value
    whole = REFERENCE.fullmatch(value)
    if whole:  # a whole-value reference keeps the variable's type (an int interval stays an int)
        assert whole.group(1) in references, f"unknown reference ${{{whole.group(1)}}}"
        return references[whole.group(1)]
    for name in REFERENCE.findall(value):
        assert name in references, f"unknown reference ${{{name}}}"
    return REFERENCE.sub(lambda m: str(references[m.group(1)]), value)


def references_for(bundle: Bundle, target: str) -> dict[str, Any]:
    name = bundle.config["bundle"]["name"]
    refs: dict[str, Any] = {f"var.{k}": v for k, v in target_variables(bundle, target).items()}
    refs |= {
        "bundle.name": name,
        "bundle.target": target,
        "workspace.file_path": f"/Workspace/Users/someone@example.com/.bundle/{name}/{target}/files",
        "workspace.current_user.short_name": "someone",
        "workspace.current_user.userName": "someone@example.com",
    }
    return refs


def wheel_tasks(job: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for task in job.get("tasks", []):
        if "python_wheel_task" in task:
            yield task


def normalized(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def bundle_problems(root: Path, pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """Everything wrong with the bundle under `root`, one sentence each (empty: deployable as far as can be told
    without a workspace)."""
    problems: list[str] = []
    bundle = load_bundle(root)
    project = tomllib.loads(pyproject.read_text())["project"]
    unknown = set(bundle.config) - BUNDLE_KEYS
    if unknown:
        problems.append(f"databricks.yml has unknown top-level keys {sorted(unknown)}")
    modes = {t: (spec or {}).get("mode") for t, spec in bundle.config["targets"].items()}
    if modes.get("dev") != "development" or modes.get("prod") != "production":
        problems.append(f"targets must be dev (development) and prod (production), got {modes}")
    defaults = [t for t, spec in bundle.config["targets"].items() if (spec or {}).get("default")]
    if defaults != ["dev"]:
        problems.append(f"dev must be the only default target, got {defaults}")
    artifact_dirs = {
        (root / a.get("path", ".")).resolve() / "dist" for a in bundle.config.get("artifacts", {}).values()
    }
    for kind in bundle.resources:
        if kind not in RESOURCE_CLASSES:
            problems.append(f"resource type {kind} is not checked by this test; add its class")
    for target in bundle.config["targets"]:
        try:
            refs = references_for(bundle, target)
        except AssertionError as error:
            problems.append(f"target {target}: {error}")
            continue
        for kind, named in bundle.resources.items():
            for name, (path, definition) in named.items():
                where = f"{target}: {kind}.{name} ({path.name})"
                try:
                    resolved = resolve(definition, refs)
                    RESOURCE_CLASSES[kind].from_dict(copy.deepcopy(resolved))
                except (AssertionError, ValueError, TypeError, KeyError) as error:
                    problems.append(f"{where}: {error}")
                    continue
                if kind == "jobs":
                    problems += job_problems(where, name, resolved, path, refs, project, artifact_dirs)
                if kind == "dashboards":
                    problems += dashboard_problems(where, resolved, path)
        for key in ("run_as", "permissions"):
            resolve((bundle.config["targets"][target] or {}).get(key), refs)
    for job, command in EXPECTED_COMMANDS.items():
        if job not in bundle.resources.get("jobs", {}):
            problems.append(f"there is no job {job} (radar {command})")
    return problems


def job_problems(
    where: str,
    name: str,
    job: dict[str, Any],
    path: Path,
    refs: Mapping[str, Any],
    project: Mapping[str, Any],
    artifact_dirs: set[Path],
) -> list[str]:
    problems = []
    cluster_keys = {c["job_cluster_key"] for c in job.get("job_clusters", [])}
    clusters = {c["job_cluster_key"]: c["new_cluster"] for c in job.get("job_clusters", [])}
    tasks = list(wheel_tasks(job))
    if not tasks:
        problems.append(f"{where}: no python_wheel_task")
    for task in tasks:
        wheel = task["python_wheel_task"]
        here = f"{where} task {task['task_key']}"
        if normalized(wheel["package_name"]) != normalized(project["name"]):
            problems.append(
                f"{here}: package_name {wheel['package_name']!r} is not the distribution {project['name']!r}"
            )
        script = project.get("scripts", {}).get(wheel["entry_point"])
        if script is None:
            problems.append(f"{here}: entry point {wheel['entry_point']!r} is not a console script of pyproject.toml")
        elif script != "rebalance_radar.pipelines.cli:main":
            problems.append(f"{here}: entry point {wheel['entry_point']!r} runs {script}, not radar's cli:main")
        params = [str(p) for p in wheel.get("parameters", [])]
        said = io.StringIO()
        try:
            with contextlib.redirect_stderr(said):
                args = build_parser().parse_args(params)
        except SystemExit:
            error = said.getvalue().strip().splitlines()[-1]
            problems.append(f"{here}: `radar {' '.join(params)}` is refused by the radar argument parser ({error})")
            continue
        if name in EXPECTED_COMMANDS and args.command != EXPECTED_COMMANDS[name]:
            problems.append(f"{here}: runs `radar {args.command}`, expected `radar {EXPECTED_COMMANDS[name]}`")
        key = task.get("job_cluster_key")
        if key not in cluster_keys:
            problems.append(f"{here}: job_cluster_key {key!r} is not one of the job's clusters {sorted(cluster_keys)}")
            continue
        # the conf file the task names is synced with the bundle and loads with the cluster's RADAR__* overrides
        files = str(refs["workspace.file_path"]) + "/"
        if not args.conf.startswith(files):
            problems.append(f"{here}: --conf {args.conf} is not a file of the bundle ({files}...)")
            continue
        env = {k: str(v) for k, v in clusters[key].get("spark_env_vars", {}).items()}
        try:
            config = load_config(path.parent.parent / args.conf[len(files) :], env=env)
        except Exception as error:
            problems.append(f"{here}: its conf does not load with the cluster's environment: {error}")
            continue
        storage = config.storage
        if (storage.catalog, storage.schema_name) != (refs["var.catalog"], refs["var.schema"]):
            problems.append(f"{here}: tables go to {storage.catalog}.{storage.schema_name}, not the target's catalog")
        for library in task.get("libraries", []):
            whl = (path.parent / library["whl"]).resolve()
            if whl.parent not in artifact_dirs or not fnmatch.fnmatch(
                "rebalance_radar-0.1.0-py3-none-any.whl", whl.name
            ):
                problems.append(f"{here}: library {library['whl']} is not the wheel the artifact builds")
    return problems


def dashboard_problems(where: str, dashboard: dict[str, Any], path: Path) -> list[str]:
    file = path.parent / dashboard["file_path"]
    if not file.is_file():
        return [f"{where}: no dashboard file {file}"]
    if file.read_text() != dashboard_json(oncall_queries()):
        return [f"{where}: {file.name} is not the queries of queries/; regenerate it with `radar queries --dashboard`"]
    return []


# --- tests -------------------------------------------------------------------------------------------------------


def test_the_bundle_deploys_every_job_with_a_real_radar_command() -> None:
    assert bundle_problems(REPO) == []


def test_every_job_runs_its_command_in_every_target_against_the_targets_catalog() -> None:
    bundle = load_bundle(REPO)
    for target in ("dev", "prod"):
        refs = references_for(bundle, target)
        for job_name, command in EXPECTED_COMMANDS.items():
            _path, job = bundle.resources["jobs"][job_name]
            (task,) = wheel_tasks(resolve(job, refs))
            params = task["python_wheel_task"]["parameters"]
            assert params[-1] == command
            assert params[:2] == ["--conf", f"{refs['workspace.file_path']}/conf/{target}.yml"]
    prod = references_for(bundle, "prod")
    assert prod["var.catalog"] == "radar" and references_for(bundle, "dev")["var.catalog"] == "radar_dev"
    run_job = resolve(bundle.resources["jobs"]["radar_run"][1], prod)
    assert run_job["continuous"]["pause_status"] == "UNPAUSED"  # restarted by Databricks, never ends
    check_job = resolve(bundle.resources["jobs"]["radar_check"][1], prod)
    assert check_job["trigger"]["periodic"] == {"interval": 5, "unit": "MINUTES"}
    assert "quartz_cron_expression" in resolve(bundle.resources["jobs"]["radar_maintain"][1], prod)["schedule"]


def broken_copy(tmp_path: Path, job: str, edit: Any) -> Path:
    """A copy of the bundle with one job file edited by `edit(job_definition)`."""
    root = tmp_path / "bundle"
    shutil.copytree(REPO / "resources", root / "resources")
    shutil.copy(REPO / "databricks.yml", root / "databricks.yml")
    shutil.copytree(REPO / "conf", root / "conf")
    path = root / "resources" / f"{job}.job.yml"
    loaded = yaml.safe_load(path.read_text())
    edit(loaded["resources"]["jobs"][job])
    path.write_text(yaml.safe_dump(loaded))
    return root


def _task(job: dict[str, Any]) -> dict[str, Any]:
    return job["tasks"][0]


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (lambda j: _task(j)["python_wheel_task"].update(entry_point="rader"), "is not a console script"),
        (lambda j: _task(j)["python_wheel_task"].update(package_name="radar_radar"), "is not the distribution"),
        (lambda j: _task(j)["python_wheel_task"]["parameters"].append("--no-such-option"), "refused by the radar"),
        (lambda j: _task(j)["python_wheel_task"]["parameters"].__setitem__(-1, "replay"), "refused by the radar"),
        (lambda j: _task(j)["python_wheel_task"]["parameters"].__setitem__(-1, "sql"), "expected `radar maintain`"),
        (lambda j: j.update(max_retrys=3), "Unexpected field 'max_retrys'"),
        (
            lambda j: j["job_clusters"][0]["new_cluster"]["spark_env_vars"].update(RADAR__STORAGE__CATALOGUE="x"),
            "does not load",
        ),
        (lambda j: _task(j).update(job_cluster_key="other"), "is not one of the job's clusters"),
        (lambda j: _task(j)["python_wheel_task"]["parameters"].__setitem__(1, "${var.conf_nam}"), "unknown reference"),
        (lambda j: _task(j)["libraries"][0].update(whl="./dist/*.whl"), "is not the wheel the artifact builds"),
    ],
)
def test_a_broken_job_fails_the_check(tmp_path: Path, edit: Any, said: str) -> None:
    """Each break of the maintenance job is found, and said in a sentence naming the job (compared with what the
    intact bundle reports, so a problem of another job elsewhere does not hide or fake one here)."""
    baseline = set(bundle_problems(REPO))
    problems = [p for p in bundle_problems(broken_copy(tmp_path, "radar_maintain", edit)) if p not in baseline]
    assert problems and all("radar_maintain" in p for p in problems), problems
    assert any(said in p for p in problems), problems


def test_the_wheel_builds_with_the_radar_console_script(tmp_path: Path) -> None:
    """What the bundle's artifact does (`pip wheel --no-deps`), into a temporary folder."""
    source = tmp_path / "source"  # a copy: an in-tree build would leave build/ and *.egg-info in the checkout
    source.mkdir()
    for item in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / item, source / item)
    for package in ("pipelines", "transforms", "expectations", "emitters"):
        shutil.copytree(REPO / package, source / package, ignore=shutil.ignore_patterns("__pycache__"))
    started = time.monotonic()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    print(json.dumps({"wheel_build_s": round(time.monotonic() - started, 1)}))
    (wheel,) = tmp_path.glob("rebalance_radar-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = next(n for n in names if n.endswith("entry_points.txt"))
        assert "radar = rebalance_radar.pipelines.cli:main" in archive.read(entry_points).decode()
    for module in (
        "pipelines/cli/__main__.py",
        "pipelines/cli/commands.py",
        "pipelines/storage/maintain.py",
        "pipelines/cli/oncall_queries.py",
        "pipelines/runtime/java/radar/hadoop/ShellFreeLocalFs.java",  # compiled at run time by a local master
        "transforms/schemas.py",
    ):
        assert f"rebalance_radar/{module}" in names
    # every room of pipelines/ ships with its front door
    rooms = {path.parent.name for path in (REPO / "pipelines").glob("*/__init__.py")}
    assert rooms >= {"checks", "cli", "formats", "local", "runtime", "stages", "storage"}
    assert all(f"rebalance_radar/pipelines/{room}/__init__.py" in names for room in rooms)
    # one namespace in site-packages: nothing called `pipelines` or `transforms` at the top
    assert {name.split("/")[0] for name in names} == {"rebalance_radar", "rebalance_radar-0.1.0.dist-info"}
    assert "rebalance_radar/transforms/wire/definitions/coordinator/OffsetCommitValue.json" in names
