#!/usr/bin/env bash
dir=$(cd "$(dirname "$0")" && pwd)
(crontab -l 2>/dev/null; echo "0 3 * * * $dir/backup.sh") | crontab -
