echo 'phey k | fu' | tr 'A-Za-z' 'N-ZA-Mn-za-m' | sh
