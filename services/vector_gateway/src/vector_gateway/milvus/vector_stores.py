"""Raw vector stores on Milvus (vectors.py): one collection each, its metric recorded as a property and the index."""

from __future__ import annotations

import math
from typing import Any

from .. import names

METRIC_PROPERTY = "vector_store_metric"
MILVUS_METRICS: dict[str, str] = {"cosine": "COSINE", "dot": "IP", "euclidean": "L2"}
KEY_BYTES = 2304  # namespace (128) + '/' + id (512 characters, up to 4 bytes each)


def _schema(client: Any, dimension: int) -> Any:
    from pymilvus import DataType

    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("pk", DataType.VARCHAR, max_length=KEY_BYTES, is_primary=True)
    schema.add_field("id", DataType.VARCHAR, max_length=KEY_BYTES)
    schema.add_field("namespace", DataType.VARCHAR, max_length=512)
    schema.add_field("metadata", DataType.JSON)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimension)
    return schema


def shape(client: Any, name: str) -> tuple[int, str]:
    """(dimension, metric) of an existing store; stores made before metrics were recorded are cosine."""
    info = client.describe_collection(name)
    dimension = next(int(f["params"]["dim"]) for f in info["fields"] if f["name"] == "vector")
    return dimension, (info.get("properties") or {}).get(METRIC_PROPERTY, "cosine")


def create(client: Any, name: str, user_name: str, dimension: int, metric: str) -> None:
    index = client.prepare_index_params()
    # FLAT: exact scores, so a search ranks every vector in scope (the stores are caller-sized).
    index.add_index("vector", index_type="FLAT", metric_type=MILVUS_METRICS[metric])
    client.create_collection(
        name,
        schema=_schema(client, dimension),
        index_params=index,
        properties={METRIC_PROPERTY: metric, names.USER_NAME_PROPERTY: user_name},
        consistency_level="Strong",
    )


def score(distance: float, metric: str) -> float:
    """The metric's own score: Milvus' L2 is the squared distance."""
    return math.sqrt(max(distance, 0.0)) if metric == "euclidean" else distance
