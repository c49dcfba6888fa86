// The floor under berth's no-op sync: a program that does nothing but `lstat` every path a
// store's stat records list, as cheaply as this machine allows. bench.py builds it
// (`cc -O2 -static -pthread`, with `-DWITH_URING -luring` where liburing is installed) and
// times it in turn with berth's no-op and uv's, so the figure says how far berth is from
// one `lstat` per recorded path and whether batching those calls could buy anything.
//
//   noop_floor MODE THREADS ROOT < PATHS
//
// PATHS: one path per line, relative to ROOT (the store's `store-v1`), each entry's paths
// together and sorted. MODE:
//   paths  `fstatat(ROOT, path, AT_SYMLINK_NOFOLLOW)` for every path, split over THREADS
//   dirs   each folder opened once (`O_PATH`) and its children `lstat`ed by bare name
//   uring  every `statx` submitted through one io_uring, 256 at a time (THREADS ignored)
// Prints the number of paths checked and their total size, so nothing is optimised away.
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef WITH_URING
#include <liburing.h>
#endif

#define MAX_PATHS 1000000
#define MAX_THREADS 64

struct job {
    char **paths;
    int count;
    int root;
    int by_folder;
};

static void *check(void *arg) {
    struct job *job = arg;
    struct stat st;
    long total = 0;
    char folder[4096] = "";
    int folder_fd = -1;
    for (int i = 0; i < job->count; i++) {
        const char *path = job->paths[i];
        int at = job->root;
        const char *slash = job->by_folder ? strrchr(path, '/') : NULL;
        if (slash) {
            size_t len = (size_t)(slash - path);
            if (len >= sizeof folder) return (void *)-1L;
            if (strlen(folder) != len || strncmp(folder, path, len) != 0) {
                if (folder_fd >= 0) close(folder_fd);
                memcpy(folder, path, len);
                folder[len] = 0;
                folder_fd = openat(job->root, folder, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            }
            at = folder_fd;
            path = slash + 1;
        }
        if (fstatat(at, path, &st, AT_SYMLINK_NOFOLLOW) == 0) total += st.st_size;
    }
    if (folder_fd >= 0) close(folder_fd);
    return (void *)total;
}

#ifdef WITH_URING
static long check_uring(char **paths, int count, int root) {
    enum { DEPTH = 256 };
    struct statx *stx = calloc((size_t)count, sizeof *stx);
    struct io_uring ring;
    if (!stx || io_uring_queue_init(DEPTH, &ring, 0) != 0) return -1;
    long total = 0;
    int done = 0, next = 0, in_flight = 0;
    while (done < count) {
        while (next < count && in_flight < DEPTH) {
            struct io_uring_sqe *sqe = io_uring_get_sqe(&ring);
            if (!sqe) break;
            io_uring_prep_statx(sqe, root, paths[next], AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &stx[next]);
            io_uring_sqe_set_data64(sqe, (unsigned long long)next);
            next++;
            in_flight++;
        }
        io_uring_submit_and_wait(&ring, 1);
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&ring, head, cqe) {
            if (cqe->res == 0) total += (long)stx[cqe->user_data].stx_size;
            seen++;
        }
        io_uring_cq_advance(&ring, seen);
        done += (int)seen;
        in_flight -= (int)seen;
    }
    io_uring_queue_exit(&ring);
    return total;
}
#endif

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: noop_floor paths|dirs|uring THREADS ROOT < PATHS\n");
        return 2;
    }
    const char *mode = argv[1];
    int threads = atoi(argv[2]);
    if (threads < 1 || threads > MAX_THREADS) threads = 1;
    int root = open(argv[3], O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) {
        perror(argv[3]);
        return 1;
    }
    static char *paths[MAX_PATHS];
    int count = 0;
    char line[4096];
    while (count < MAX_PATHS && fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        paths[count++] = strdup(line);
    }
    long total = 0;
    if (strcmp(mode, "uring") == 0) {
#ifdef WITH_URING
        total = check_uring(paths, count, root);
#else
        fprintf(stderr, "noop_floor: built without liburing\n");
        return 2;
#endif
    } else {
        pthread_t thread[MAX_THREADS];
        struct job job[MAX_THREADS];
        int per = (count + threads - 1) / threads;
        for (int k = 0; k < threads; k++) {
            int start = k * per < count ? k * per : count;
            int end = start + per < count ? start + per : count;
            job[k] = (struct job){paths + start, end - start, root, strcmp(mode, "dirs") == 0};
            pthread_create(&thread[k], NULL, check, &job[k]);
        }
        for (int k = 0; k < threads; k++) {
            void *part;
            pthread_join(thread[k], &part);
            total += (long)part;
        }
    }
    if (total < 0) return 1;
    printf("%d paths, %ld bytes\n", count, total);
    return 0;
}
