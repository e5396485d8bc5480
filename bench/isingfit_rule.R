# The published IsingFit rule (van Borkulo et al. 2014), written from its description
# for bench/mrf_select.py: node-wise glmnet logistic regressions (glmnet defaults), EBIC
# per node with gamma, AND rule, weights the mean of the two coefficients, thresholds the
# intercepts.
#   Rscript bench/isingfit_rule.R DATA.csv OUT.csv [GAMMA [NODES]]
# writes OUT.csv (the edges i,j,w, 0-based), OUT.csv.thr.csv (the thresholds) and
# OUT.csv.B.csv (each regression's coefficients, one row per variable); with NODES
# (0-based, comma-separated) only those variables' regressions run, and only the
# coefficient rows are written (node,j,b for the non-zeros).
suppressMessages(library(glmnet))
args <- commandArgs(TRUE)
x <- as.matrix(read.csv(args[1], header = FALSE))
gamma <- if (length(args) > 2) as.numeric(args[3]) else 0.25
n <- nrow(x); p <- ncol(x)
nodes <- if (length(args) > 3) as.integer(strsplit(args[4], ",")[[1]]) + 1 else 1:p
B <- matrix(0, p, p); thr <- numeric(p)
t0 <- proc.time()[["elapsed"]]
for (i in nodes) {
  fit <- glmnet(x[, -i], x[, i], family = "binomial")
  eta <- predict(fit, newx = x[, -i], type = "link")
  ll <- colSums(x[, i] * eta - log1p(exp(eta)))
  J <- fit$df
  ebic <- -2 * ll + J * log(n) + 2 * gamma * J * log(p - 1)
  k <- which.min(ebic)
  cf <- as.numeric(coef(fit)[, k])
  B[i, -i] <- cf[-1]
  thr[i] <- cf[1]
}
el <- proc.time()[["elapsed"]] - t0
if (length(args) > 3) {
  nz <- which(B[nodes, , drop = FALSE] != 0, arr.ind = TRUE)
  out <- data.frame(node = nodes[nz[, 1]] - 1, j = nz[, 2] - 1, b = B[nodes, , drop = FALSE][nz])
  write.csv(out, args[2], row.names = FALSE)
  cat(sprintf("R IsingFit rule: %d regressions, %.2fs\n", length(nodes), el))
  quit(save = "no")
}
nzm <- B != 0
W <- (B + t(B)) / 2 * (nzm & t(nzm))
out <- which(upper.tri(W) & W != 0, arr.ind = TRUE)
out <- out[order(out[, 1], out[, 2]), , drop = FALSE]
write.csv(data.frame(i = out[, 1] - 1, j = out[, 2] - 1, w = W[out]), args[2], row.names = FALSE)
write.csv(data.frame(threshold = thr), paste0(args[2], ".thr.csv"), row.names = FALSE)
write.csv(B, paste0(args[2], ".B.csv"), row.names = FALSE)
cat(sprintf("R IsingFit rule: %d edges, %.2fs\n", nrow(out), el))
