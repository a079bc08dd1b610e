"""Framework retrievers over recall and documents.query (optional extras):
``amem-db[langchain]`` (amem_db/integrations/langchain.py) and ``amem-db[llamaindex]``
(amem_db/integrations/llamaindex.py). Both take a ``Memory`` (async-native: ``ainvoke`` /
``aretrieve`` await it on the caller's loop) or a ``SyncMemory`` (both paths work)."""
