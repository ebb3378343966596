#include <stdio.h>
#include <stdlib.h>
#include "ops.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: calc A B\n");
        return 2;
    }
    int a = atoi(argv[1]), b = atoi(argv[2]);
    printf("%d %d %d\n", add(a, b), sub(a, b), mul(a, b));
    return 0;
}
