"""BM25 over a cached benchmark's chunks with any k1, b and title weight, as Milvus and Lance score it (bench.tune).

The terms are the gateway's own (vector_gateway.lexical): each chunk's stored BM25 text, split on spaces. The
formula is the one both engines use: idf = ln(1 + (N - n + 0.5) / (n + 0.5)) and
tf x (k1 + 1) / (tf + k1 x (1 - b + b x dl / avgdl)), summed over the query's distinct terms (Milvus' default
k1 1.2, b 0.75). ``check`` compares it with the engine's own scores from bench.rankings' lists.

A title weight w adds the title's terms w - 1 more times to each chunk (what repeating the title in the stored
text would do; the stored text holds it once, as vector_gateway.passages.search_text writes it).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from scipy import sparse  # type: ignore[import-untyped]  # pinned in constraints.txt (sentence-transformers needs it); no stubs


class Bm25:
    def __init__(self, texts: Sequence[str], titles: Sequence[str]) -> None:
        self.vocabulary: dict[str, int] = {}
        self.terms = self._matrix([text.split() for text in texts])
        self.title_terms = self._matrix([title.split() for title in titles], grow=False)

    def _matrix(self, documents: list[list[str]], grow: bool = True) -> sparse.csr_matrix:
        rows, cols = [], []
        for row, words in enumerate(documents):
            for word in words:
                column = self.vocabulary.get(word)
                if column is None:
                    if not grow:
                        continue  # a title word the text lacks: the stored text holds the title, so none
                    column = self.vocabulary[word] = len(self.vocabulary)
                rows.append(row)
                cols.append(column)
        shape = (len(documents), len(self.vocabulary) if grow else self.terms.shape[1])
        ones = np.ones(len(rows), dtype=np.float32)
        return sparse.csr_matrix((ones, (rows, cols)), shape=shape)  # duplicates add up: term frequencies

    def weights(self, k1: float = 1.2, b: float = 0.75, title_weight: float = 1.0) -> sparse.csr_matrix:
        """chunks x terms: each term's BM25 contribution in each chunk."""
        tf = self.terms if title_weight == 1.0 else (self.terms + (title_weight - 1.0) * self.title_terms).tocsr()
        length = np.asarray(tf.sum(axis=1)).ravel()
        norm = k1 * (1.0 - b + b * length / max(length.mean(), 1e-9))
        documents = tf.shape[0]
        frequency = np.bincount(tf.indices, minlength=tf.shape[1])
        idf = np.log(1.0 + (documents - frequency + 0.5) / (frequency + 0.5)).astype(np.float32)
        out = tf.copy().astype(np.float32)
        row_of = np.repeat(np.arange(documents), np.diff(out.indptr))
        out.data = idf[out.indices] * out.data * (k1 + 1.0) / (out.data + norm[row_of])
        return out.tocsc()

    def query_matrix(self, queries: Sequence[str]) -> sparse.csr_matrix:
        """queries x terms: 1 for each distinct known term of each (analysed) query."""
        rows, cols = [], []
        for row, text in enumerate(queries):
            for term in dict.fromkeys(text.split()):
                if (column := self.vocabulary.get(term)) is not None:
                    rows.append(row)
                    cols.append(column)
        ones = np.ones(len(rows), dtype=np.float32)
        return sparse.csr_matrix((ones, (rows, cols)), shape=(len(queries), len(self.vocabulary)))

    def scores(self, queries: sparse.csr_matrix, weights: sparse.csc_matrix) -> np.ndarray:
        """queries x chunks BM25 scores (dense)."""
        return np.asarray((queries @ weights.T).todense(), dtype=np.float32)
