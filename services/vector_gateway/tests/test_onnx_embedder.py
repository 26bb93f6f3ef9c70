"""The ONNX Runtime engine gives sentence-transformers' vectors, for the bundled model and a user's own folder;
the engine setting chooses; a model that cannot be exported falls back to torch with one log line."""

from __future__ import annotations

import json
import logging
import os
import shutil
from itertools import islice
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError
from vector_gateway import onnx_export
from vector_gateway.embedder import Embedder, SentenceTransformerEmbedder, choose_engine, create_embedder, resolve_model
from vector_gateway.settings import GatewaySettings

SCIFACT = Path(__file__).resolve().parents[3].parent / "shared" / "bench" / "scifact" / "corpus.jsonl"


def settings(**fields: object) -> GatewaySettings:
    # fp32: these tests hold the ONNX engine to sentence-transformers' own vectors (test_int8.py: the int8 variant)
    return GatewaySettings(**{"milvus_uri": "unused.db", "embedding_precision": "fp32", **fields})


def cosines(a: list[list[float]], b: list[list[float]]) -> np.ndarray:
    # Both sides are L2-normalised: the row-wise dot product is the cosine.
    return (np.asarray(a) * np.asarray(b)).sum(axis=1)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    """The fp32 ONNX engine (the shared fixture is the CPU's default, int8 where it has VNNI/AMX)."""
    return create_embedder(settings())


@pytest.fixture(scope="module")
def int8_embedder() -> Embedder:
    return create_embedder(settings(embedding_precision="int8"))


@pytest.fixture(scope="module")
def torch_embedder() -> Embedder:
    return create_embedder(settings(embedding_engine="torch"))


@pytest.fixture(scope="module")
def full_onnx_embedder() -> Embedder:
    """The full load on ONNX Runtime (sentence-transformers' model in hand), whatever the cache holds: the
    session's ``embedder`` starts torch-free once a manifest is cached (test_torch_free_start.py)."""
    from vector_gateway.embedder import load_sentence_transformer, onnx_embedder

    name, path = resolve_model("")
    return onnx_embedder(name, load_sentence_transformer(path, "cpu"), path, settings())


@pytest.fixture(scope="module")
def own_model(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A user's model folder (a copy of the bundled one under another name) and an empty ONNX cache."""
    folder = tmp_path_factory.mktemp("models") / "my-minilm"
    shutil.copytree(resolve_model("")[1], folder)
    return folder, tmp_path_factory.mktemp("onnx-cache")


def test_the_default_engine_on_a_cpu_is_onnx_runtime(embedder: Embedder) -> None:
    assert (embedder.engine, embedder.device, embedder.dimension) == ("onnx", "cpu", 384)
    assert embedder.session_settings["intra_op_threads"] >= 1


@pytest.mark.slow
@pytest.mark.timeout(1200)
@pytest.mark.skipif(not SCIFACT.is_file(), reason="shared/bench/scifact is not beside the repo")
def test_vectors_equal_sentence_transformers_on_scifact_passages(embedder, torch_embedder) -> None:
    """300 abstracts in the suite (about a minute on 2 cores); `make bench` runs it on 1,000
    (ONNX_EQUALITY_PASSAGES=1000), as it was first measured."""
    count = int(os.environ.get("ONNX_EQUALITY_PASSAGES", "300"))
    with SCIFACT.open(encoding="utf-8") as lines:
        docs = [json.loads(line) for line in islice(lines, count)]
    # Whole abstracts: many run past the model's 256 tokens, so truncation is compared too.
    passages = [f"{doc['title']}\n{doc['text']}" for doc in docs]
    found = cosines(embedder.embed_documents(passages), torch_embedder.embed_documents(passages))
    assert len(found) == count and found.min() >= 0.9999, (found.min(), int(found.argmin()))


def test_long_text_is_cut_where_sentence_transformers_cuts_it(embedder, torch_embedder) -> None:
    # The bundled tokenizer.json truncates at 128 tokens; the model reads 256. Past 256 words, text is ignored.
    head = " ".join(f"word{i}" for i in range(400))
    texts = [head, head + " and a different ending", "short query", "x"]
    onnx, torch = embedder.embed_documents(texts), torch_embedder.embed_documents(texts)
    assert cosines(onnx, torch).min() >= 0.9999
    assert cosines([onnx[0]], [onnx[1]])[0] >= 0.99999  # both cut before the ending
    assert cosines([embedder.embed_query("short query")], [torch[2]])[0] >= 0.9999
    half = " ".join(f"word{i}" for i in range(70))  # 140-210 tokens: not cut at the tokenizer file's 128
    assert cosines([embedder.embed_query(half)], [embedder.embed_query(half + " more words at the end")])[0] < 0.9999


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_concurrent_calls_give_the_sequential_vectors(precision: str, request: pytest.FixtureRequest) -> None:
    # The gateway embeds queries and upserts from worker threads at the same time.
    from concurrent.futures import ThreadPoolExecutor

    embedder: Embedder = request.getfixturevalue("embedder" if precision == "fp32" else "int8_embedder")
    texts = [f"passage {i} " + "about something " * (i * 7 % 90) for i in range(24)]
    alone = embedder.embed_documents(texts)
    with ThreadPoolExecutor(max_workers=6) as pool:
        together = list(pool.map(lambda i: embedder.embed_documents(texts[i : i + 4]), range(0, 24, 4)))
        queries = list(pool.map(embedder.embed_query, texts))
    assert cosines([v for batch in together for v in batch], alone).min() >= 0.99999
    assert cosines(queries, alone).min() >= 0.9999


@pytest.mark.parametrize(
    ("engine", "device", "gpu", "expected"),
    [
        ("auto", "auto", False, ("onnx", "cpu")),
        ("auto", "auto", True, ("torch", "cuda")),
        ("auto", "cpu", True, ("onnx", "cpu")),
        ("torch", "auto", False, ("torch", "cpu")),
        ("onnx", "auto", True, ("onnx", "cpu")),
        ("auto", "cuda:1", True, ("torch", "cuda:1")),
    ],
)
def test_the_engine_follows_the_setting_and_the_gpu(monkeypatch, engine, device, gpu, expected) -> None:
    import torch

    # No GPU on the CI machines: what torch reports is the one thing faked here.
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpu)
    assert choose_engine(settings(embedding_engine=engine, embedding_device=device)) == expected


def test_engine_settings_are_checked_at_start_up(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValidationError, match="ENGINE=onnx runs on the CPU"):
        settings(embedding_engine="onnx", embedding_device="cuda")
    with pytest.raises(ValidationError):
        settings(embedding_engine="tensorrt")
    monkeypatch.setenv("VECTOR_GATEWAY_EMBEDDING_ENGINE", "torch")
    monkeypatch.setenv("VECTOR_GATEWAY_EMBEDDING_THREADS", "1")
    assert (settings().embedding_engine, settings().embedding_threads) == ("torch", 1)


def test_a_users_model_folder_works_on_both_engines(own_model, torch_embedder) -> None:
    folder, cache = own_model
    onnx = create_embedder(settings(embedding_model=str(folder), embedding_cache_dir=cache))
    torch = create_embedder(settings(embedding_model=str(folder), embedding_engine="torch"))
    assert (onnx.engine, torch.engine) == ("onnx", "torch")
    assert onnx.model_name == torch.model_name == "my-minilm"
    texts = ["a user's own model", "embeds on either engine, with the same vectors"]
    assert cosines(onnx.embed_documents(texts), torch.embed_documents(texts)).min() >= 0.9999
    exported = list(cache.glob("my-minilm-*/model.onnx"))
    assert len(exported) == 1 and not list(cache.glob("*/.export-*"))  # written atomically, nothing left over


def test_the_export_is_reused_until_the_model_files_change(own_model, monkeypatch) -> None:
    folder, cache = own_model
    create_embedder(settings(embedding_model=str(folder), embedding_cache_dir=cache))  # exported (or cached) here
    before = onnx_export.onnx_file(folder, cache)
    assert before.is_file()

    def no_export(*_args: object) -> None:
        raise AssertionError("exported again although the model did not change")

    monkeypatch.setattr(onnx_export, "export", no_export)
    assert create_embedder(settings(embedding_model=str(folder), embedding_cache_dir=cache)).engine == "onnx"
    config = folder / "config_sentence_transformers.json"
    config.write_text(config.read_text() + "\n")
    assert onnx_export.onnx_file(folder, cache) != before  # a changed model is exported anew


def test_a_model_that_cannot_be_exported_falls_back_to_torch_with_one_log_line(
    own_model, monkeypatch, caplog: pytest.LogCaptureFixture, torch_embedder
) -> None:
    folder, _ = own_model

    def broken_trace(*_args: object) -> None:  # a fault no real model here produces on demand
        raise RuntimeError("Exporting the operator 'aten::fancy_op' to ONNX opset version 17 is not supported.\n...")

    monkeypatch.setattr(onnx_export, "trace", broken_trace)
    with caplog.at_level(logging.INFO):
        fallback = create_embedder(settings(embedding_model=str(folder), embedding_cache_dir=folder.parent / "new"))
    assert isinstance(fallback, SentenceTransformerEmbedder) and fallback.engine == "torch"
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and warnings[0].name == "vector_gateway.embedder"
    message = warnings[0].getMessage()
    assert "cannot run on ONNX Runtime" in message and "aten::fancy_op" in message and "torch" in message
    assert "\n" not in message
    vectors = fallback.embed_documents(["still embeds"])
    assert cosines(vectors, torch_embedder.embed_documents(["still embeds"]))[0] >= 0.9999


def test_the_direct_tokenizer_and_numpy_pooling_give_the_generic_paths_vectors(full_onnx_embedder) -> None:
    from vector_gateway.onnx_embedder import FastPath

    embedder = full_onnx_embedder
    # The bundled model takes both shortcuts; switched off, the model's own preprocess and modules run instead.
    assert embedder.fast == FastPath(tokenize=True, mean_pooling=True)
    texts = ["Short.", "A Longer Sentence, With CAPITALS and café.", "word " * 300, "", "x y"]
    generic = embedder.__class__.__new__(embedder.__class__)
    generic.__dict__.update(embedder.__dict__, fast=FastPath(tokenize=False, mean_pooling=False))
    assert cosines(embedder.embed_documents(texts), generic.embed_documents(texts)).min() >= 0.99999
    assert cosines([embedder.embed_query(texts[1])], [generic.embed_query(texts[1])])[0] >= 0.99999


def test_a_model_with_a_prompt_and_cls_pooling_takes_the_generic_path(own_model, tmp_path) -> None:
    """A user's model that the shortcuts do not cover (a default prompt, CLS pooling) still gets encode()'s vectors."""
    folder = tmp_path / "prompted-cls"
    shutil.copytree(own_model[0], folder)
    (folder / "1_Pooling" / "config.json").write_text(
        json.dumps({"word_embedding_dimension": 384, "pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False})
    )
    config = {"prompts": {"query": "query: ", "document": "passage: "}, "default_prompt_name": "document"}
    (folder / "config_sentence_transformers.json").write_text(json.dumps(config))
    onnx = create_embedder(settings(embedding_model=str(folder), embedding_cache_dir=own_model[1]))
    torch = create_embedder(settings(embedding_model=str(folder), embedding_engine="torch"))
    assert onnx.engine == "onnx" and onnx.session_settings["fast_path"] == {"tokenize": False, "mean_pooling": False}
    assert not list(own_model[1].glob("prompted-cls-*/light.json"))  # no torch-free start for it: never verified
    texts = ["a user's own model with a prompt", "and the first token's vector as the sentence " * 20]
    assert cosines(onnx.embed_documents(texts), torch.embed_documents(texts)).min() >= 0.9999


def test_batches_group_texts_of_like_token_length() -> None:
    from vector_gateway.onnx_runtime import length_groups

    lengths = [250, 240, 230, 200, 190, 60, 58, 20, 18, 14, 3]  # sorted longest first, as the embedder sorts them
    groups = [lengths[g] for g in length_groups(lengths, batch_size=64)]
    assert groups == [[250, 240, 230], [200, 190], [60, 58], [20, 18, 14], [3]]
    assert [len(lengths[g]) for g in length_groups([100] * 10, batch_size=4)] == [4, 4, 2]
    assert length_groups([], batch_size=4) == []


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_a_call_in_document_order_gives_the_vectors_of_each_text_alone(
    precision: str, request: pytest.FixtureRequest
) -> None:
    # Texts of mixed length in one call are regrouped by token length and put back in the caller's order. int8 runs
    # each text alone: in a batch, dynamic quantisation's shared activation range moved them (cosine 0.988).
    embedder: Embedder = request.getfixturevalue("embedder" if precision == "fp32" else "int8_embedder")
    texts = [f"sentence {i} " + "with more words " * (i * 13 % 60) for i in range(40)]
    together = embedder.embed_documents(texts)
    alone = [embedder.embed_query(text) for text in texts]
    assert cosines(together, alone).min() >= 0.99999
