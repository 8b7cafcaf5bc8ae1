# Copyright (c) 2022, NVIDIA CORPORATION. All rights reserved.


from .tokenizer import build_tokenizer
