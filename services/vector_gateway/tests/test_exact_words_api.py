"""A one-word query's word as written ranks above its stems (issue 52, point 1).

The passages are real: Debian's installation guide in Spanish (installation-guide-amd64, install.es.txt). BM25 matches
stems, so "automáticamente" meets "automática" and "automático" as the same term; before, the passages that repeat
"configuración automática" ranked first and the ones holding the word that was asked for came after them.
"""

from __future__ import annotations

from typing import Any

import pytest
from ingestion_contracts.gateway import EXACT_PHRASE_SCORE

GUIDE_ES = [
    "Por omisión, debian-installer intenta configurar la red del ordenador de forma automática en la medida de lo "
    "posible. Si falla la configuración automática, puede ser por varios factores, desde un cable sin conexión a la "
    "red a un infraestructura insuficiente para la configuración automática. Para una explicación detallada en caso "
    "de error, comprueba los mensajes de error en la cuarta consola.",
    "La configuración automática de IPv4 se realiza mediante DHCP (Dynamic Host Configuration Protocol). La "
    "configuración automática de IPv6 permite una configuración automática sin estado mediante NDP (Neighbor "
    "Discovery Protocol, incluyendo una asignación de servidor recursivo DNS (RDNSS)), configuración con estado "
    "mediante DHCPv6, y la configuración automática mixta con estado/sin estado.",
    "En muchos casos, el instalador será capaz de detectar automáticamente su hardware. Pero esté preparado, le "
    "recomendamos que se familiarice con su hardware antes de la instalación.",
    "Fije este valor a false para deshabilitar el expulsado automático, pero tenga en cuenta que debe asegurarse que "
    "el sistema no arranca de forma automática de la unidad óptica tras la instalación inicial.",
    "Este valor especifica la url de un fichero de preconfiguración que se cargará en la instalación automática. "
    "Consulte Sección 4.6, «Instalación automática».",
]
HOLDS_THE_WORD = 2


@pytest.fixture(scope="module")
async def guide(gateway_app: Any, make_doc: Any, upsert: Any) -> str:
    name = "exact_words_es"
    body = make_doc("install.es.txt", GUIDE_ES, title="Guía de instalación de Debian", file_type="txt")
    await upsert(gateway_app[0], name, body)
    return name


@pytest.mark.parametrize("mode", ["hybrid", "keyword"])
@pytest.mark.parametrize("query", ["automáticamente", "AUTOMATICAMENTE", "automáticamente?"])
async def test_the_word_as_written_ranks_above_its_stem(client, guide, search, mode: str, query: str) -> None:
    found = await search(client, query=query, collections=[guide], mode=mode, top_k=5)
    ranks = [(h["chunk_index"], h["score"], h["phrase_score"]) for h in found["hits"]]
    assert found["hits"][0]["chunk_index"] == HOLDS_THE_WORD, (query, ranks)
    assert found["hits"][0]["score"] >= EXACT_PHRASE_SCORE, ranks
    # The passages that hold only a sibling of the word keep their own score: nothing is added to them.
    assert all(h["phrase_score"] == 0 for h in found["hits"][1:]), ranks


async def test_semantic_search_ranks_by_meaning_alone(client, guide, search) -> None:
    found = await search(client, query="automáticamente", collections=[guide], mode="semantic", top_k=5)
    assert all(h["phrase_score"] == 0 for h in found["hits"])
