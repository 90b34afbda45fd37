"""A LlamaIndex retriever over mnemo (needs ``llama-index-core``; not a dependency of mnemo).

    retriever = MnemoLlamaRetriever(mnemo.open("~/agent"), k=4)
    nodes = retriever.retrieve("postgres migration")
"""
from __future__ import annotations

from typing import List

from llama_index.core.retrievers import BaseRetriever
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

import mnemo


class MnemoLlamaRetriever(BaseRetriever):
    """mnemo's results as LlamaIndex nodes, scored by mnemo."""

    def __init__(self, handle: mnemo.Mnemo, k: int = 6) -> None:
        super().__init__()
        self._m = handle
        self._k = k

    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        return [
            NodeWithScore(node=TextNode(text=r.snippet, id_=r.citation,
                                        metadata={"path": r.path, "kind": r.kind}),
                          score=r.score)
            for r in self._m.search(query_bundle.query_str, max_results=self._k)
        ]
