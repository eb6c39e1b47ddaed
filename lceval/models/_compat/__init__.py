"""Adapters: the only places lceval reaches a library's private API or reads a library's source.

One module per library (``ray``, ``vllm``, ``torch``); each use names, beside it, the public
feature or upstream issue it waits for, so a release that breaks it breaks here alone.
``tests/test_private_apis.py`` fails on such a use anywhere else in lceval.
"""
