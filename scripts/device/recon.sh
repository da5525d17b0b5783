# What the GPU machine has: driver, libraries, Python, and gpuvet check as it stands.
nvidia-smi
nvidia-smi -q | head -120
ldconfig -p | grep -E "cuda|cudnn|nccl|nvidia-ml|cublas|openblas|nvrtc" 
ls -la /usr/local/cuda /usr/local/ | head -30
python3 -c "import torch, sys; print(sys.executable, torch.__version__, torch.version.cuda, torch.backends.cudnn.version(), torch.cuda.get_arch_list())"
python3 -c "import torch, os; print(os.path.dirname(torch.__file__))"
ls /usr/local/lib/python3*/dist-packages/nvidia 2>/dev/null; ls $(python3 -c "import site; print(site.getsitepackages()[0])")/nvidia 2>/dev/null
cat /proc/driver/nvidia/version; grep nvidia /proc/modules
ls -la /dev/nvidia*
env | grep -iE "cuda|nvidia|ld_library|path" 
cat /etc/ld.so.conf.d/* 2>/dev/null
"$GPUVET" check --verbose --no-python
