"""A LangChain retriever over mnemo (needs ``langchain-core``; not a dependency of mnemo).

    retriever = MnemoRetriever(handle=mnemo.open("~/agent"), k=4)
    docs = retriever.invoke("postgres migration")
"""
from __future__ import annotations

from typing import List

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever

import mnemo


class MnemoRetriever(BaseRetriever):
    """Notes and stored facts from mnemo as LangChain documents (metadata: the result's dict)."""

    handle: mnemo.Mnemo
    k: int = 6

    model_config = {"arbitrary_types_allowed": True}

    def _get_relevant_documents(self, query: str, *,
                                run_manager: CallbackManagerForRetrieverRun) -> List[Document]:
        return [Document(page_content=r.snippet, metadata=r.to_dict())
                for r in self.handle.search(query, max_results=self.k)]
