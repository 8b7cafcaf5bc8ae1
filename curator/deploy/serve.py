"""Starting NVIDIA's Triton server on an exported repository.

The server comes from the ``nvidia-pytriton`` wheel (Triton 2.51 with the python backend),
installed in its own virtualenv (``scripts/setup_triton.sh`` -> ``.venv-triton``) because it
pins ``numpy<2``. Three things make its ``tritonserver`` run outside pytriton:

* the python backend needs the ``triton_python_backend_stub`` built for the venv's Python
  version, copied into a backend folder (pytriton does the same in its workspace);
* ``LD_LIBRARY_PATH`` must hold the venv Python's ``LIBDIR`` (else the stub fails with
  ``'_thread.RLock' object has no attribute '_recursion_count'``) and ``nvidia_pytriton.libs``;
* the stub must see the venv's site-packages (numpy, onnxruntime, tokenizers) on
  ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

from curator.base.errors import InputError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def default_venv() -> str:
    return os.environ.get("CURATOR_TRITON_VENV", os.path.join(ROOT, ".venv-triton"))


def _venv_info(venv: str) -> dict[str, str]:
    py = os.path.join(venv, "bin", "python")
    if not os.path.exists(py):
        raise InputError(f"{venv}: no Triton virtualenv; create it with scripts/setup_triton.sh")
    code = ("import json, os, sys, sysconfig, site, pytriton; print(json.dumps({"
            "'libdir': sysconfig.get_config_var('LIBDIR'), 'site': site.getsitepackages()[0], "
            "'pytriton': os.path.dirname(pytriton.__file__), "
            "'version': f'{sys.version_info[0]}.{sys.version_info[1]}'}))")
    p = subprocess.run([py, "-c", code], capture_output=True, text=True)  # noqa: S603 - venv python
    if p.returncode:
        raise InputError(f"{venv}: nvidia-pytriton is not installed there "
                         f"({p.stderr.strip()[-200:]}); run scripts/setup_triton.sh")
    return json.loads(p.stdout)


def prepare_server(runtime_dir: str, venv: str | None = None) -> tuple[list[str], dict[str, str]]:
    """(the ``tritonserver`` binary plus backend/cache flags, the environment to run it in).
    ``runtime_dir`` receives the backend folder with the right stub."""
    info = _venv_info(venv or default_venv())
    dist = os.path.join(info["pytriton"], "tritonserver")
    backends = os.path.join(runtime_dir, "backends")
    if not os.path.exists(os.path.join(backends, "python", "triton_python_backend_stub")):
        from curator.storage.outputs import claim_output_dir

        claim_output_dir(runtime_dir, "serve")  # never clear a folder curator did not make
        shutil.rmtree(backends, ignore_errors=True)
        shutil.copytree(os.path.join(dist, "backends"), backends)
        shutil.copy(os.path.join(dist, "python_backend_stubs", info["version"],
                                 "triton_python_backend_stub"),
                    os.path.join(backends, "python", "triton_python_backend_stub"))
    env = dict(os.environ)
    libs = [info["libdir"], os.path.join(os.path.dirname(info["pytriton"]),
                                         "nvidia_pytriton.libs")]
    env["LD_LIBRARY_PATH"] = os.pathsep.join(libs + [env.get("LD_LIBRARY_PATH", "")]).rstrip(":")
    env["PYTHONPATH"] = info["site"]
    env["CURATOR_TRITON_SITE"] = info["site"]
    env.setdefault("OMP_NUM_THREADS", "1")
    cmd = [os.path.join(dist, "bin", "tritonserver"), f"--backend-directory={backends}",
           f"--cache-directory={os.path.join(dist, 'caches')}"]
    return cmd, env


def exposure_warning(host: str, http_port: int, grpc_port: int) -> str | None:
    """The warning for a server bound beyond loopback: Triton has no authentication, so
    anyone who reaches the port can run inference (and read model metadata and statistics)."""
    from curator.core.tls import is_loopback

    if is_loopback(host):
        return None
    return (f"warning: Triton has no authentication: anyone who can reach {host}:{http_port} "
            f"(HTTP) or :{grpc_port} (gRPC) can query the model and read its statistics; keep "
            "it on 127.0.0.1 behind an authenticating reverse proxy (docs/deploy.md)")


def server_command(repository: str, runtime_dir: str, *, http_port: int = 8000,
                   grpc_port: int = 8001, metrics_port: int = 8002, host: str = "127.0.0.1",
                   venv: str | None = None) -> tuple[list[str], dict[str, str]]:
    if not os.path.exists(os.path.join(repository)):
        raise InputError(f"{repository}: no such model repository")
    cmd, env = prepare_server(runtime_dir, venv)
    cmd += [f"--model-repository={os.path.abspath(repository)}", f"--http-port={http_port}",
            f"--grpc-port={grpc_port}", f"--metrics-port={metrics_port}",
            f"--http-address={host}", f"--grpc-address={host}", "--allow-metrics=false",
            "--exit-on-error=true", "--strict-readiness=true"]
    return cmd, env
