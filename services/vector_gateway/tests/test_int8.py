"""int8 embeddings (int8.py): chosen from the CPU and the index, made once in the model's cache folder, close to fp32's
vectors, recorded with each collection, and never mixed with fp32's unknowingly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from vector_gateway import int8
from vector_gateway.embedder import Embedder, create_embedder, resolve_model
from vector_gateway.main import create_app
from vector_gateway.onnx_export import onnx_file
from vector_gateway.settings import BUNDLED_MODEL_NAME, GatewaySettings

INT8 = f"{BUNDLED_MODEL_NAME}+int8pc"  # the current scheme (int8.CURRENT): what a new index gets
LEGACY = f"{BUNDLED_MODEL_NAME}+int8"  # the scheme of the collections made before 2026-12-07
TEXTS = [
    "Ospreys dive for fish in cold lakes and carry them head first.",
    "A torque wrench tightens bolts to a set force.",
    "Mitochondrial DNA mutations accumulate with age in human muscle fibres.",
    "The 1987 Tour de France was won by Stephen Roche.",
]


def settings(**fields: Any) -> GatewaySettings:
    return GatewaySettings(**{"milvus_uri": "unused.db", **fields})


@pytest.fixture(scope="module")
def int8_embedder() -> Embedder:
    return create_embedder(settings(embedding_precision="int8"))


@pytest.fixture(scope="module")
def fp32_embedder() -> Embedder:
    return create_embedder(settings(embedding_precision="fp32"))


def test_auto_follows_the_setting_the_index_and_then_the_cpu() -> None:
    vnni, avx2 = {"avx2", "avx512_vnni"}, {"avx2", "fma"}
    choose = int8.choose
    assert choose("auto", [], onnx_on_cpu=True, flags=vnni)[0] == "int8pc"
    assert choose("auto", [], onnx_on_cpu=True, flags=avx2)[0] == "fp32"  # its int8 kernel saturates: fp32 stays
    assert choose("auto", [], onnx_on_cpu=True, flags={"amx_int8"})[0] == "int8pc"
    assert choose("auto", [BUNDLED_MODEL_NAME], onnx_on_cpu=True, flags=vnni)[0] == "fp32"  # an fp32 index stays so
    assert choose("auto", [INT8, INT8], onnx_on_cpu=True, flags=avx2)[0] == "int8pc"  # a folder moved to another CPU
    assert choose("auto", [INT8, BUNDLED_MODEL_NAME], onnx_on_cpu=True, flags=avx2)[0] == "fp32"  # mixed: the CPU
    assert choose("auto", [], onnx_on_cpu=False, flags=vnni)[0] == "fp32"  # torch (a GPU)
    assert choose("auto", [], onnx_on_cpu=True, deployment=True, flags=vnni)[0] == "fp32"  # replicas: say it
    assert choose("int8", [BUNDLED_MODEL_NAME], onnx_on_cpu=True, flags=avx2)[0] == "int8pc"  # said outright
    assert (int8.identity(BUNDLED_MODEL_NAME, "int8pc"), int8.precision_of(INT8)) == (INT8, "int8")


def test_an_index_made_with_the_older_scheme_keeps_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Collections embedded before the per-channel scheme hold the older scheme's vectors: auto and int8 keep that
    scheme for them; a new index, or one with both, gets the current one; fp32 stays fp32."""
    vnni, choose = {"avx512_vnni"}, int8.choose
    assert choose("auto", [LEGACY, LEGACY], onnx_on_cpu=True, flags=vnni)[0] == "int8"
    assert choose("int8", [LEGACY], onnx_on_cpu=True, flags=vnni)[0] == "int8"
    assert choose("int8", [LEGACY, INT8], onnx_on_cpu=True, flags=vnni)[0] == "int8pc"  # both: the new one's
    assert choose("fp32", [LEGACY], onnx_on_cpu=True, flags=vnni)[0] == "fp32"
    assert (int8.vectors_of(LEGACY), int8.vectors_of(INT8), int8.vectors_of(BUNDLED_MODEL_NAME)) == (
        "int8", "int8pc", "fp32")  # fmt: skip
    assert int8.precision_of(LEGACY) == int8.precision_of(INT8) == "int8"
    # The one-line install ships the current scheme's file and has no onnx to make the older one: it says so.
    monkeypatch.setattr(int8, "quantizer_installed", lambda: False)
    assert choose("auto", [], onnx_on_cpu=True, flags=vnni, shipped={"int8pc"})[0] == "int8pc"
    assert choose("auto", [], onnx_on_cpu=True, flags=vnni)[0] == "fp32"  # nothing shipped, nothing to make it
    with pytest.raises(int8.SchemeUnavailable, match=r"int8 scheme .*pip install onnx"):
        choose("auto", [LEGACY], onnx_on_cpu=True, flags=vnni, shipped={"int8pc"})


def test_the_current_scheme_quantizes_every_layer_but_the_first_ffn_output_per_channel() -> None:
    """int8pc: per-channel weights everywhere, only layer 0's FFN-output MatMul in fp32 (1.18-1.20x int8's rate in
    a folder sync); the older scheme, made from the same export, keeps all six in fp32 and per-tensor scales."""
    import onnx

    export = onnx_file(resolve_model("")[1])
    for scheme, fp32_matmuls, per_channel in (("int8pc", 1, True), ("int8", 6, False)):
        graph = onnx.load(str(int8.ensure_int8(export, export.parent, scheme)), load_external_data=False).graph
        assert sum(node.op_type == "MatMul" for node in graph.node) == fp32_matmuls, scheme
        scales = [t for t in graph.initializer if t.name.endswith("_scale")]
        assert scales and any(len(t.dims) == 1 and t.dims[0] > 1 for t in scales) == per_channel, scheme


def test_int8_needs_onnx_on_the_cpu() -> None:
    for fields in ({"embedding_engine": "torch"}, {"embedding_device": "cuda"}):
        with pytest.raises(ValueError, match="VECTOR_GATEWAY_EMBEDDING_PRECISION=int8 runs on ONNX Runtime"):
            settings(embedding_precision="int8", **fields)


def test_the_int8_embedder_is_close_to_fp32_and_says_what_it_is(
    int8_embedder: Embedder, fp32_embedder: Embedder
) -> None:
    assert int8_embedder.model_name == INT8 and fp32_embedder.model_name == BUNDLED_MODEL_NAME
    assert getattr(int8_embedder, "precision", None) == "int8" and int8_embedder.dimension == 384
    quantized, full = np.asarray(int8_embedder.embed_documents(TEXTS)), np.asarray(fp32_embedder.embed_documents(TEXTS))
    cosine = (quantized * full).sum(axis=1)
    # close (bench.experiments.int8: 0.9956 on 288 passages) ...
    assert cosine.min() > 0.98 and cosine.mean() > 0.99, cosine
    assert not np.allclose(quantized, full, atol=1e-4)  # ... but other vectors: hence the identity
    query = np.asarray(int8_embedder.embed_query(TEXTS[2]))
    assert int(np.argmax(full @ query)) == 2
    # Made once in the model's cache folder: its layers' weights in int8 (the word embeddings stay fp32).
    graph = int8.int8_file(onnx_file(resolve_model("")[1]).parent, "int8pc")
    assert graph.is_file() and graph.stat().st_size < 0.8 * graph.with_name("model.onnx").stat().st_size


def test_int8_runs_texts_side_by_side_one_thread_each(int8_embedder: Embedder) -> None:
    """One text a run is too small to share between threads: a document batch runs its texts in lanes of one thread
    (as many as the CPUs), and each text's vector is the one it has alone, in any order and any company."""
    from vector_gateway.onnx_runtime import available_cpus

    settings_ = getattr(int8_embedder, "session_settings", {})
    assert settings_["intra_op_threads"] == 1 and settings_["lanes"] == available_cpus(), settings_
    texts = TEXTS * 3
    together = np.asarray(int8_embedder.embed_documents(texts))
    alone = np.asarray([int8_embedder.embed_query(text) for text in texts])
    assert np.allclose(together, alone, atol=1e-6)
    assert np.allclose(np.asarray(int8_embedder.embed_documents(texts[::-1])), together[::-1], atol=1e-6)


async def test_a_collection_keeps_its_precision_and_the_other_is_refused(
    open_gateway: Any, tmp_path: Path, upsert: Any, make_doc: Any, int8_embedder: Embedder, fp32_embedder: Embedder
) -> None:
    db = tmp_path / "milvus.db"
    doc = make_doc("osprey.md", TEXTS[:2])
    async with open_gateway(db, int8_embedder) as (client, _):
        await upsert(client, "birds", doc)
        assert (await client.get("/v1/collections/birds")).json()["embedding_model"] == INT8
    async with open_gateway(db, fp32_embedder) as (client, _):  # the other precision: refused, said why
        found = await client.post("/v1/search", json={"query": "fish", "collections": ["birds"]})
        assert found.status_code == 409 and found.json()["code"] == "EMBEDDING_MISMATCH", found.text
        assert "holds int8 (int8pc scheme) vectors" in found.json()["error"]
        assert "VECTOR_GATEWAY_EMBEDDING_PRECISION=int8" in found.json()["suggestion"]
        again = await client.post("/v1/collections/birds/documents", json=make_doc("heron.md", ["Herons wait."]))
        assert again.status_code == 409 and again.json()["code"] == "EMBEDDING_MISMATCH"
    # auto (no embedder injected: the gateway loads its own) follows the index: int8, whatever the CPU has.
    app = create_app(settings(milvus_uri=str(db), lance_uri=str(db.with_suffix(".lance")), embedding_engine="onnx"))
    holder = app.state.gateway.embedders
    holder._load()
    assert holder.get().model_name == INT8


async def test_a_library_of_the_older_scheme_is_searched_with_it_after_the_upgrade(
    open_gateway: Any, tmp_path: Path, upsert: Any, make_doc: Any, int8_embedder: Embedder
) -> None:
    """A library embedded with the older int8 scheme: the gateway that starts on it (auto) runs that scheme, finds
    its passages and adds to it; a gateway running the current scheme refuses it and says how to go on."""
    db = tmp_path / "milvus.db"
    older = create_embedder(settings(embedding_precision="int8"), stored=[LEGACY])
    assert older.model_name == LEGACY and getattr(older, "precision", None) == "int8"
    assert not np.allclose(older.embed_query(TEXTS[0]), int8_embedder.embed_query(TEXTS[0]), atol=1e-4)
    async with open_gateway(db, older) as (client, _):
        await upsert(client, "birds", make_doc("osprey.md", TEXTS[:2]))
    async with open_gateway(db, int8_embedder) as (client, _):
        found = await client.post("/v1/search", json={"query": "fish", "collections": ["birds"]})
        assert found.status_code == 409 and found.json()["code"] == "EMBEDDING_MISMATCH", found.text
        assert "holds int8 (int8 scheme) vectors" in found.json()["error"]
        assert "PRECISION=auto or int8" in found.json()["suggestion"]
    app = create_app(settings(milvus_uri=str(db), lance_uri=str(db.with_suffix(".lance")), embedding_engine="onnx"))
    holder = app.state.gateway.embedders
    holder._load()
    assert holder.get().model_name == LEGACY
    assert np.allclose(holder.get().embed_query(TEXTS[0]), older.embed_query(TEXTS[0]), atol=1e-6)
