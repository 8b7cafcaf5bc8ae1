"""The small core: documents, stages, the pipeline DAG, executors, the runner and the report."""
