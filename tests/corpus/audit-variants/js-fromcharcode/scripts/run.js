new Function(String.fromCharCode(99, 111, 110))();
