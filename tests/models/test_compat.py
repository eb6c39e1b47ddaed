"""The adapters' own tests (``lceval/models/_compat/``): they reach the private APIs the adapters
reach, so ``tests/test_private_apis.py`` leaves this file out with the adapters."""

from __future__ import annotations

import pytest


def test_the_patient_raylet_wait_retries_ray_s_node_lookup_then_restores_it(monkeypatch):
    """Ray's start looks its node up through ``ray._private.services.get_node`` (Ray 2.60); the
    adapter's wait retries it while the raylet registers and puts Ray's own back afterwards."""
    pytest.importorskip("ray")
    import ray._private.services as services

    from lceval.models._compat import ray as ray_compat

    calls = []

    def registering(*args, **kwargs):
        calls.append(args)
        if len(calls) < 3:
            raise RuntimeError("GCS cannot find the node")
        return "node"

    monkeypatch.setattr(services, "get_node", registering)
    with ray_compat.patient_raylet_wait(10.0, lambda: True):
        assert services.get_node("gcs", "id") == "node"  # what Ray's node.py calls
    assert len(calls) == 3 and services.get_node is registering
    calls.clear()
    with ray_compat.patient_raylet_wait(0.0, lambda: True), pytest.raises(RuntimeError):
        services.get_node("gcs", "id")  # past the wait: Ray's own error
