"""Neural models shared by stage families: loading a Hugging Face folder, choosing a device and
dtype, text encoders. Below the families (both ``curator.classifiers`` and ``curator.dedup`` use
it), so no family imports another; torch and transformers are imported lazily."""
