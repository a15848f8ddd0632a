const s = Buffer.from(process.argv[2], "base64").toString();
eval(s);
