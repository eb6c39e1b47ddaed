"""Model backends behind one protocol (base.Backend): hf, vllm, openai; their declared options
(backends.py), model specs, generation, the model an LLM judge asks (judge.py), Ray replicas."""
