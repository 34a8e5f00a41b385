"""The folder a command objective's Python finds first on its path: its ``sitecustomize``
paces the script's output (searchsvc.worker.command)."""
