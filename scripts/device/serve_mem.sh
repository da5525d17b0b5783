#!/bin/sh
# Where gpuvet serve's resident memory goes on the GPU machine (26-27 MiB there, 8 MiB with the
# fake NVML): who loads what (LD_DEBUG=files), the resident size per mapping with anonymous
# mappings apart, with and without the periodic check. Writes $OUT/serve_mem/*.txt.
set -u
OUT=${OUT:-/tmp/gpuvet-out}/serve_mem
mkdir -p "$OUT"
[ -d .devlib ] && export LD_LIBRARY_PATH="$PWD/.devlib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
G=${GPUVET:-./build/gpuvet}
measure() { # name, extra serve options
	name=$1; shift
	LD_DEBUG=files LD_DEBUG_OUTPUT="$OUT/lddebug-$name" "$G" serve --listen 127.0.0.1:9479 "$@" > "$OUT/serve-$name.out" 2>&1 &
	s=$!
	sleep 5
	python3 -c 'import urllib.request;urllib.request.urlopen("http://127.0.0.1:9479/metrics").read()' 2>> "$OUT/serve-$name.out"
	sleep 1
	grep -E "VmRSS|VmHWM|RssAnon|RssFile|Threads" /proc/$s/status > "$OUT/status-$name.txt"
	awk '/^[0-9a-f]+-[0-9a-f]+ /{name=($6 == "" ? "[anon " $1 "]" : $6)} /^Rss:/{rss[name]+=$2} END{for(n in rss) if (rss[n] > 0) print rss[n], n}' \
		/proc/$s/smaps | sort -rn | head -30 > "$OUT/smaps-$name.txt"
	kill $s; wait $s 2>/dev/null
	cat "$OUT"/lddebug-$name.* 2>/dev/null | grep -E "file=.*(libcuda|libnvidia)" | sort -u > "$OUT/loads-$name.txt"
	rm -f "$OUT"/lddebug-$name.*
}
measure default
measure nocheck --check-interval 0

cc -O2 -o /tmp/nvml_rss scripts/device/nvml_rss.c -ldl > "$OUT/nvml_rss.build.txt" 2>&1 && /tmp/nvml_rss > "$OUT/nvml_rss.txt" 2>&1
echo done
