/* SPDX-License-Identifier: MIT */
/*
 * rel_gendata DIR MEGABYTES: the inputs of the transparency suite, the same
 * on every run: DIR/data.txt (lines of words and numbers: compressible,
 * sortable), DIR/tree/ (files for tar) and DIR/project/ (a small C project
 * for make -j4 whose program prints checksums of what its parts compute).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

static uint64_t state = 0x9e3779b97f4a7c15u;

static uint64_t next_random(void)
{
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

static FILE *open_in(const char *directory, const char *name)
{
	char path[4200];
	FILE *file;

	snprintf(path, sizeof(path), "%s/%s", directory, name);
	file = fopen(path, "w");
	if (!file) {
		perror(path);
		exit(1);
	}
	return file;
}

static void close_checked(FILE *file)
{
	if (fclose(file) != 0) {
		perror("fclose");
		exit(1);
	}
}

static void make_text(const char *directory, const char *name, size_t size)
{
	static const char *const words[] = { "alpha", "bravo", "charlie", "delta", "echo", "foxtrot",
					     "golf", "hotel", "india", "juliet", "kilo", "lima" };
	FILE *file = open_in(directory, name);
	size_t written = 0;

	while (written < size) {
		uint64_t r = next_random();

		written += (size_t)fprintf(file, "%s %s %llu %s\n", words[r % 12], words[(r >> 8) % 12],
					   (unsigned long long)(r >> 20) % 1000000, words[(r >> 40) % 12]);
	}
	close_checked(file);
}

static void make_project(const char *directory, int parts)
{
	char path[4096];
	FILE *makefile, *main_file;

	snprintf(path, sizeof(path), "%s/project", directory);
	mkdir(path, 0755);
	makefile = open_in(path, "Makefile");
	fprintf(makefile, "CFLAGS = -O1 -pthread\nOBJECTS =");
	for (int i = 0; i < parts; i++)
		fprintf(makefile, " part%d.o", i);
	fprintf(makefile, " main.o\n\nall: prog tables\n\nprog: $(OBJECTS)\n\t$(CC) -pthread -o $@ $(OBJECTS)\n\n"
			  "%%.o: %%.c\n\t$(CC) $(CFLAGS) -c -o $@ $<\n\n"
			  "tables: prog\n\t$(MAKE) -j2 -f Makefile.tables\n\n"
			  "clean:\n\trm -f prog *.o table*.txt\n\n.PHONY: all clean tables\n");
	close_checked(makefile);

	makefile = open_in(path, "Makefile.tables");
	fprintf(makefile, "TABLES =");
	for (int i = 0; i < 8; i++)
		fprintf(makefile, " table%d.txt", i);
	fprintf(makefile, "\nall: $(TABLES)\ntable%%.txt: prog\n\t./prog $* > $@\n");
	close_checked(makefile);

	for (int i = 0; i < parts; i++) {
		char name[32];
		FILE *part;

		snprintf(name, sizeof(name), "part%d.c", i);
		part = open_in(path, name);
		fprintf(part, "unsigned long part%d(unsigned long x);\n"
			      "unsigned long part%d(unsigned long x)\n{\n"
			      "\tfor (int i = 0; i < %d; i++)\n\t\tx = x * %lluu + %d;\n\treturn x;\n}\n",
			i, i, 10 + i, (unsigned long long)(next_random() % 1000) | 1, i);
		close_checked(part);
	}
	main_file = open_in(path, "main.c");
	fprintf(main_file, "#include <pthread.h>\n#include <stdio.h>\n#include <stdlib.h>\n");
	for (int i = 0; i < parts; i++)
		fprintf(main_file, "unsigned long part%d(unsigned long x);\n", i);
	fprintf(main_file, "static unsigned long (*const parts[])(unsigned long) = {");
	for (int i = 0; i < parts; i++)
		fprintf(main_file, " part%d,", i);
	fprintf(main_file,
		" };\n#define NPARTS %d\n"
		"static unsigned long results[NPARTS];\n"
		"static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;\nstatic int next;\n"
		"static void *worker(void *arg)\n{\n\tfor (;;) {\n\t\tint i;\n"
		"\t\tpthread_mutex_lock(&lock);\n\t\ti = next++;\n\t\tpthread_mutex_unlock(&lock);\n"
		"\t\tif (i >= NPARTS)\n\t\t\treturn arg;\n"
		"\t\tresults[i] = parts[i]((unsigned long)i + (unsigned long)(size_t)arg);\n\t}\n}\n"
		"int main(int argc, char **argv)\n{\n\tpthread_t t[4];\n\tunsigned long seed = argc > 1 ? strtoul(argv[1], 0, 10) : 0;\n"
		"\tfor (int i = 0; i < 4; i++)\n\t\tpthread_create(&t[i], 0, worker, (void *)(size_t)seed);\n"
		"\tfor (int i = 0; i < 4; i++)\n\t\tpthread_join(t[i], 0);\n"
		"\tfor (int i = 0; i < NPARTS; i++)\n\t\tprintf(\"%%d %%lu\\n\", i, results[i]);\n\treturn 0;\n}\n",
		parts);
	close_checked(main_file);
}

int main(int argc, char **argv)
{
	char tree[4096];

	if (argc != 3) {
		fprintf(stderr, "usage: rel_gendata DIR MEGABYTES\n");
		return 2;
	}
	mkdir(argv[1], 0755);
	make_text(argv[1], "data.txt", (size_t)atoi(argv[2]) << 20);
	snprintf(tree, sizeof(tree), "%s/tree", argv[1]);
	mkdir(tree, 0755);
	for (int i = 0; i < 16; i++) {
		char name[32];

		snprintf(name, sizeof(name), "file%02d.txt", i);
		make_text(tree, name, (size_t)(i + 1) * 16384);
	}
	make_project(argv[1], 24);
	return 0;
}
