// Placeholder until the command line lands (issue 6).
console.error('study-export: the command line is not built yet');
process.exit(1);
