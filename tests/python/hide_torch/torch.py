# Put first on PYTHONPATH by the tune end-to-end test: `import torch` fails as where PyTorch is
# not installed, whatever the interpreter has.
raise ImportError("No module named 'torch' (hidden by gpuvet's test)")
