/* SPDX-License-Identifier: MIT */
/* A module rel_target dlopens: its constructor starts threads that wait
 * in a semaphore until rel_plugin_release(). */
#include <pthread.h>
#include <semaphore.h>

#define PLUGIN_THREADS 4

static sem_t go;
static pthread_t threads[PLUGIN_THREADS];

static void *plugin_main(void *argument)
{
	while (sem_wait(&go) != 0)
		;
	return argument;
}

__attribute__((constructor)) static void plugin_start(void)
{
	sem_init(&go, 0, 0);
	for (int i = 0; i < PLUGIN_THREADS; i++)
		pthread_create(&threads[i], NULL, plugin_main, NULL);
}

int rel_plugin_threads(void);
int rel_plugin_threads(void)
{
	return PLUGIN_THREADS;
}

void rel_plugin_release(void);
void rel_plugin_release(void)
{
	for (int i = 0; i < PLUGIN_THREADS; i++)
		sem_post(&go);
	for (int i = 0; i < PLUGIN_THREADS; i++)
		pthread_join(threads[i], NULL);
}
