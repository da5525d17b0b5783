# a job that starts a helper in a session of its own (setsid) and fails; the helper keeps the
# job's output open and would run for 1000 s. It works in the folder given, where the runner
# looks for what is left.
cd "$1" || exit 1
setsid sleep 1000 &
echo "epoch 0: loading data"
exit 3
