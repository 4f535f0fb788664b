"""The process: the ``llm-gateway`` command, the application assembled from both HTTP edges
(``gateway`` for product teams, ``admin`` for administrators), and uvicorn with its workers."""
