"""Stage family 'deploy'. Keep this file light: only the name -> 'module:Class' table."""

STAGES: dict[str, str] = {"export_triton": "curator.deploy.export_triton:ExportTriton"}
CLI = "curator.deploy.cli"
