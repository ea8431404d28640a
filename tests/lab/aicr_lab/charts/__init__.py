"""Chart serving for tests and the demo: a Helm HTTP repository (``repo``/``cli``) and an OCI registry (``oci``)."""
