"""The stages composed: what the CLI's pipeline commands and the workbench call.

- ``retrieve``: ``Retriever`` (an opened index + integrity checker) and ``retrieve()``.
- ``provision``: ``prefix``, ``build`` and ``provision`` under the vault lock.
- ``doctor``: is retrieval available, configured, verified or degraded?
- ``bench``: provisioning and retrieval timings on a throwaway copy of a vault.
"""
