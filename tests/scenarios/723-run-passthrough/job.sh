printf 'line one\nline two without newline'
exit 0
