#!/bin/sh
nc -z "$1" 443 && echo open
