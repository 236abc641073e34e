"""The fault-injection suite: one private PostgreSQL cluster, one private Redis and two fawn
workers per module (``-m faults`` runs it alone, in parallel with ``-m "not faults"``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import base_config
from tests.faults.cluster import Deployment, private_services
from tests.support.openai_stub import StubServerThread


@pytest.fixture(scope="module")
def deployment(
    stub: StubServerThread, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    root = tmp_path_factory.mktemp("faults")
    with private_services(root) as (postgres, redis):
        base = base_config(stub, root / "unused")
        deployed = Deployment(root, postgres, redis, base).start()
        try:
            yield deployed
        finally:
            deployed.stop()
