"""The tool environments (`envs`: SGLang's bench client, sgl-eval, inspect, llama.cpp) and the
scripts that run inside them with their own interpreters (`scripts`)."""
