"""Configuration: file discovery, ``$VAR`` expansion, validation errors that name the problem,
the DeerFlow-compatible ``models:`` list, and the ``fawn`` command line around it."""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from fawn.config import (
    AppConfig,
    ConfigError,
    DatabaseSettings,
    ModelSettings,
    SandboxSettings,
    ServerSettings,
    find_config_path,
    load_config,
    parse_config,
)

REPO = Path(__file__).resolve().parents[2]


def write(path: Path, config: dict[str, Any] | str) -> Path:
    text = config if isinstance(config, str) else yaml.safe_dump(config)
    path.write_text(text, encoding="utf-8")
    return path


# -- discovery ------------------------------------------------------------------------------


@pytest.fixture
def three_configs(tmp_path: Path) -> tuple[Path, Path, Path]:
    explicit = write(tmp_path / "explicit.yaml", {"server": {"port": 1}})
    from_env = write(tmp_path / "env.yaml", {"server": {"port": 2}})
    local = write(tmp_path / "config.yaml", {"server": {"port": 3}})
    return explicit, from_env, local


def test_discovery_order(three_configs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    explicit, from_env, local = three_configs
    env = {"FAWN_CONFIG": str(from_env)}
    assert find_config_path(explicit, env, tmp_path) == explicit
    assert find_config_path(None, env, tmp_path) == from_env
    assert find_config_path(None, {}, tmp_path) == local
    assert find_config_path(None, {"FAWN_CONFIG": ""}, tmp_path) == local
    local.unlink()
    assert find_config_path(None, {}, tmp_path) is None
    ports = [load_config(p, {}).server.port for p in (explicit, from_env)]
    assert ports == [1, 2]


def test_missing_files_are_errors_naming_them(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        find_config_path(tmp_path / "nope.yaml", {}, tmp_path)
    assert str(raised.value) == f"config file not found: {tmp_path / 'nope.yaml'}"
    with pytest.raises(ConfigError) as raised:
        find_config_path(None, {"FAWN_CONFIG": str(tmp_path / "gone.yaml")}, tmp_path)
    assert str(raised.value) == (
        f"config file not found: {tmp_path / 'gone.yaml'} (from FAWN_CONFIG)"
    )
    assert raised.value.code == "config_invalid"


def test_defaults_without_a_file(tmp_path: Path) -> None:
    config = load_config(None, {})
    assert config == AppConfig()
    assert config.data_dir == Path(".fawn")
    assert config.server == ServerSettings(host="127.0.0.1", port=2026, cors_origins=[])
    assert config.database == DatabaseSettings(url=None, pool_size=10)
    assert (config.models, config.default_model) == ([], None)
    assert load_config(write(tmp_path / "empty.yaml", ""), {}) == AppConfig()


def test_overrides_replace_top_level_values(tmp_path: Path) -> None:
    path = write(tmp_path / "c.yaml", {"data_dir": "/from/file", "server": {"port": 9}})
    config = load_config(path, {}, {"data_dir": "/from/flag"})
    assert (config.data_dir, config.server.port) == (Path("/from/flag"), 9)


# -- $VAR -----------------------------------------------------------------------------------


def test_env_references_are_expanded_anywhere() -> None:
    raw = {
        "database": {"url": "$DB_URL"},
        "models": [
            {
                "name": "m",
                "use": "langchain_openai:ChatOpenAI",
                "model": "$MODEL",
                "api_key": " $KEY ",
                "default_headers": {"X-Token": "$TOKEN"},
                "stop": ["$STOP", "literal $STOP", "$"],
            }
        ],
    }
    env = {
        "DB_URL": "postgresql://db/x",
        "MODEL": "gpt",
        "KEY": "sk-1",
        "TOKEN": "t",
        "STOP": "END",
    }
    config = parse_config(raw, env)
    model = config.models[0]
    assert config.database.url == "postgresql://db/x"
    assert (model.model, model.api_key) == ("gpt", "sk-1")
    assert model.extra_kwargs() == {
        "default_headers": {"X-Token": "t"},
        "stop": ["END", "literal $STOP", "$"],
    }


def test_missing_env_variable_is_an_error_naming_it() -> None:
    raw = {"models": [{"name": "m", "use": "a:B", "model": "x", "api_key": "$OPENAI_API_KEY"}]}
    with pytest.raises(ConfigError) as raised:
        parse_config(raw, {})
    assert str(raised.value) == (
        "environment variable $OPENAI_API_KEY is not set (needed by models[0].api_key)"
    )
    with pytest.raises(ConfigError) as raised:
        parse_config({"database": {"url": "$PG"}}, {})
    assert str(raised.value) == "environment variable $PG is not set (needed by database.url)"


# -- validation -----------------------------------------------------------------------------


def test_unknown_top_level_section_is_an_error_naming_it() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config({"server": {}, "tools": [], "memory": {}}, {})
    assert str(raised.value) == (
        "unknown config section(s): memory, tools (known: agent, auth, checkpoints, controls, "
        "data_dir, database, evidence, models, runs, sandbox, server, streams, subagents, "
        "summarization, title, "
        "uploads)"
    )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            {"models": [{"name": "m", "use": "ChatOpenAI", "model": "x"}]},
            "invalid config: models[0].use: 'use' must look like 'module:Class', got 'ChatOpenAI'",
        ),
        (
            {"models": [{"name": "m", "use": ":Cls", "model": "x"}]},
            "invalid config: models[0].use: 'use' must look like 'module:Class', got ':Cls'",
        ),
        (
            {
                "models": [
                    {"name": "m", "use": "a:B", "model": "x"},
                    {"name": "n", "use": "a:B", "model": "y"},
                    {"name": "m", "use": "a:B", "model": "z"},
                ]
            },
            "invalid config: models: the name 'm' is used twice",
        ),
        (
            {"models": [{"use": "a:B", "model": "x"}]},
            "invalid config: models[0].name: Field required",
        ),
        (
            {"server": {"port": 70000, "bogus": 1}},
            "invalid config: server.port: Input should be less than or equal to 65535; "
            "server.bogus: Extra inputs are not permitted",
        ),
        (
            {"database": {"url": "mysql://db"}},
            "invalid config: database.url: database.url must be sqlite:// or postgresql://, "
            "got mysql://",
        ),
        (
            {"agent": {"loop_warn_after": 5, "loop_stop_after": 4}},
            "invalid config: agent: agent.loop_stop_after must be greater than "
            "agent.loop_warn_after",
        ),
        ({"models": {"name": "m"}}, "invalid config: models: Input should be a valid list"),
        (
            {"sandbox": {"run_as_uid": 0, "limits": {"processes": 1, "bogus": 1}}},
            "invalid config: sandbox.run_as_uid: Input should be greater than or equal to 1; "
            "sandbox.limits.processes: Input should be greater than or equal to 4; "
            "sandbox.limits.bogus: Extra inputs are not permitted",
        ),
    ],
)
def test_invalid_values_are_errors_naming_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(raw, {})
    assert str(raised.value) == message


def test_file_that_is_not_a_mapping_or_not_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path / "list.yaml", "- a\n- b\n"), {})
    assert (
        str(raised.value)
        == f"{tmp_path / 'list.yaml'}: the top level must be a mapping of sections"
    )
    with pytest.raises(ConfigError) as raised:
        load_config(write(tmp_path / "bad.yaml", "server: [\n"), {})
    assert str(raised.value).startswith(f"{tmp_path / 'bad.yaml'}: not valid YAML: ")


def test_deerflow_models_list_with_pass_through_keys(tmp_path: Path) -> None:
    path = write(
        tmp_path / "config.yaml",
        """
models:
  - name: gpt-4o
    display_name: GPT-4o
    use: langchain_openai:ChatOpenAI
    model: gpt-4o
    api_key: $OPENAI_API_KEY
    max_tokens: 4096
    temperature: 0.7
    supports_vision: true
  - name: deepseek-r1
    use: langchain_deepseek:ChatDeepSeek
    model: deepseek-reasoner
    api_base: https://api.deepseek.com/v1
    api_key: $DEEPSEEK_API_KEY
    supports_thinking: true
    supports_reasoning_effort: true
    when_thinking_enabled:
      extra_body:
        thinking: {type: enabled}
    timeout: 30
""",
    )
    config = load_config(path, {"OPENAI_API_KEY": "sk-o", "DEEPSEEK_API_KEY": "sk-d"})
    gpt, deepseek = config.models
    assert gpt == ModelSettings(
        name="gpt-4o",
        display_name="GPT-4o",
        use="langchain_openai:ChatOpenAI",
        model="gpt-4o",
        api_key="sk-o",
        supports_vision=True,
        max_tokens=4096,
        temperature=0.7,
    )
    assert gpt.extra_kwargs() == {"max_tokens": 4096, "temperature": 0.7}
    assert (gpt.supports_thinking, gpt.supports_reasoning_effort, gpt.base_url) == (
        False,
        False,
        None,
    )
    assert deepseek.api_base == "https://api.deepseek.com/v1"
    assert (deepseek.supports_thinking, deepseek.supports_reasoning_effort) == (True, True)
    assert deepseek.when_thinking_enabled == {"extra_body": {"thinking": {"type": "enabled"}}}
    assert deepseek.extra_kwargs() == {"timeout": 30}
    assert config.default_model == gpt
    assert config.model_by_name("deepseek-r1") == deepseek
    assert config.model_by_name("nope") is None


def test_shipped_example_config_is_valid() -> None:
    config = load_config(REPO / "config.example.yaml", {"OPENAI_API_KEY": "sk-test"})
    assert config.server == ServerSettings()
    # The example documents the sandbox's defaults, as they are.
    assert config.sandbox == SandboxSettings()
    assert [m.name for m in config.models] == ["gpt-4o-mini"]
    assert config.models[0].api_key == "sk-test"


# -- the command line -----------------------------------------------------------------------


def run_fawn(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FAWN_")}
    return subprocess.run(
        [sys.executable, "-m", "fawn.cli.main", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture
def held_port() -> Iterator[int]:
    """A port some other process is listening on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        port: int = sock.getsockname()[1]
        assert port != 2024
        yield port


def test_serve_on_a_port_in_use_is_a_one_line_error(held_port: int, tmp_path: Path) -> None:
    result = run_fawn("serve", "--port", str(held_port), "--data-dir", "data", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stderr == (
        f"fawn: port {held_port} on 127.0.0.1 is already in use; choose another with --port\n"
    )
    assert result.stdout == ""


def test_db_upgrade_on_a_fresh_data_dir(tmp_path: Path) -> None:
    first = run_fawn("db", "upgrade", "--data-dir", "data", cwd=tmp_path)
    again = run_fawn("db", "upgrade", "--data-dir", "data", cwd=tmp_path)

    assert (first.returncode, first.stdout) == (0, "fawn: database is up to date\n")
    # One line saying what changed; none of Alembic's start-up chatter.
    assert first.stderr.endswith(
        "INFO fawn.store.database: database schema upgraded from empty to 0008\n"
    )
    assert first.stderr.count("\n") == 1
    assert (again.returncode, again.stdout, again.stderr) == (
        0,
        "fawn: database is up to date\n",
        "",
    )
    with sqlite3.connect(tmp_path / "data" / "fawn.db") as db:
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        version = db.execute("SELECT version_num FROM alembic_version").fetchall()
    assert {
        "threads",
        "runs",
        "run_events",
        "users",
        "sessions",
        "api_keys",
        "run_receipts",
        "alembic_version",
    } <= tables
    assert version == [("0008",)]
    with sqlite3.connect(tmp_path / "data" / "fawn.db") as db:
        columns = {r[1]: r for r in db.execute("PRAGMA table_info(threads)")}
    # a thread records the checkpoint mode it was created in (threads before 0008: full)
    assert columns["checkpoint_mode"][2:5] == ("VARCHAR(8)", 1, "'full'")


def test_config_errors_stop_the_cli_with_the_message(tmp_path: Path) -> None:
    write(tmp_path / "config.yaml", {"database": {"url": "$FAWN_TEST_NO_SUCH_VAR"}, "x": 1})
    unknown = run_fawn("db", "upgrade", cwd=tmp_path)
    write(tmp_path / "config.yaml", {"database": {"url": "$FAWN_TEST_NO_SUCH_VAR"}})
    missing = run_fawn("db", "upgrade", cwd=tmp_path)
    assert (unknown.returncode, missing.returncode) == (2, 2)
    assert unknown.stderr.startswith("fawn: unknown config section(s): x (known: ")
    assert missing.stderr == (
        "fawn: environment variable $FAWN_TEST_NO_SUCH_VAR is not set (needed by database.url)\n"
    )


def test_help_describes_every_option(tmp_path: Path) -> None:
    top = run_fawn("--help", cwd=tmp_path)
    serve = run_fawn("serve", "--help", cwd=tmp_path)
    upgrade = run_fawn("db", "upgrade", "--help", cwd=tmp_path)
    assert top.returncode == serve.returncode == upgrade.returncode == 0
    assert "serve" in top.stdout and "run the HTTP gateway" in top.stdout
    assert "db" in top.stdout and "database maintenance" in top.stdout
    serve_help = " ".join(serve.stdout.split())
    for option, words in [
        ("--host HOST", "interface to bind (default 127.0.0.1)"),
        ("--port PORT", "port to bind (default 2026)"),
        ("--config CONFIG", "config file (default: $FAWN_CONFIG, then ./config.yaml"),
        ("--data-dir DATA_DIR", "where SQLite files and thread workspaces live"),
        ("--log-level {debug,info,warning,error,critical}", "server log level (default info)"),
    ]:
        assert f"{option} {words}" in serve_help, option
    upgrade_help = " ".join(upgrade.stdout.split())
    assert "--config CONFIG config file" in upgrade_help
    assert "--data-dir DATA_DIR where SQLite files" in upgrade_help


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"subagents": {"max_concurrent": 5}}, "max_concurrent"),
        (
            {
                "subagents": {
                    "custom_agents": [
                        {"name": "bash", "description": "d", "system_prompt": "p"},
                    ]
                }
            },
            "the name 'bash' is taken",
        ),
        (
            {"controls": {"tool_output_max_chars": 1000, "tool_output_excerpt_chars": 600}},
            "tool_output_excerpt_chars must be less than half",
        ),
        ({"controls": {"max_run_tokens": 0}}, "max_run_tokens"),
    ],
)
def test_subagent_and_control_limits_are_checked(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_config(raw, {})
