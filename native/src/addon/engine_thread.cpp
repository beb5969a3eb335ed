// Threads the addon owns for long engine calls; see engine_thread.h.
#include "addon/engine_thread.h"

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <set>
#include <string>
#include <system_error>
#include <utility>

namespace nnstudio::addon {

// ---- the jobs still running, for process exit ----
// process.exit() runs no environment cleanup and goes on to exit(), which destroys statics a running job
// may still use: the atexit handler registered with the first job stops and joins every job first. The
// registry is never destroyed, so a finalizer that runs late still finds it.
class LiveJobs {
 public:
  static LiveJobs& instance() {
    static LiveJobs* jobs = new LiveJobs();
    return *jobs;
  }

  void add(EngineThreadJob* job) {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.insert(job);
  }

  void remove(EngineThreadJob* job) {
    std::lock_guard<std::mutex> lock(mutex_);
    jobs_.erase(job);
  }

  // Holds the lock throughout, so that no finalizer deletes a job while it is joined here.
  void stopAndJoinAll() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (EngineThreadJob* job : jobs_) job->stopAndJoin();
  }

 private:
  std::mutex mutex_;
  std::set<EngineThreadJob*> jobs_;
};

// ---- starting ----

void EngineThreadJob::start(Napi::Env env, const char* name, std::unique_ptr<EngineThreadJob> job) {
  static const bool joinAtExit = std::atexit([] { LiveJobs::instance().stopAndJoinAll(); }) == 0;
  if (!joinAtExit) throw Napi::Error::New(env, "could not register the engine's exit handler");

  EngineThreadJob* self = job.get();
  const napi_status created = napi_create_threadsafe_function(
      env, nullptr, nullptr, Napi::String::New(env, name), 0 /* unbounded: every event is kept */,
      1 /* the job's thread */, self, &EngineThreadJob::finalize, nullptr, &EngineThreadJob::runTask, &self->tsfn_);
  if (created != napi_ok) throw Napi::Error::New(env, std::string(name) + ": could not create the channel to JS");
  job.release();  // from here on the finalizer deletes it
  LiveJobs::instance().add(self);

  std::lock_guard<std::mutex> lock(self->joinMutex_);
  try {
    self->thread_ = std::thread([self] {
      self->run();
      // After a post found the environment closing, Node has already dropped this thread's reference.
      if (!self->closing_) napi_release_threadsafe_function(self->tsfn_, napi_tsfn_release);
    });
  } catch (const std::system_error& error) {
    napi_release_threadsafe_function(self->tsfn_, napi_tsfn_release);  // the finalizer deletes the job
    throw Napi::Error::New(env, std::string(name) + ": could not start a thread: " + error.what());
  }
}

// ---- the job's thread ----

bool EngineThreadJob::post(JsTask task) {
  if (closing_) return false;
  auto* queued = new JsTask(std::move(task));
  const napi_status status = napi_call_threadsafe_function(tsfn_, queued, napi_tsfn_nonblocking);
  if (status == napi_ok) return true;
  delete queued;
  if (status == napi_closing) {
    closing_ = true;
    stop();
  }
  return false;
}

// ---- the JS thread ----

void EngineThreadJob::runTask(napi_env env, napi_value /*callback*/, void* /*context*/, void* data) {
  std::unique_ptr<JsTask> task(static_cast<JsTask*>(data));
  if (env == nullptr || !task) return;  // the environment is going away: the task is dropped
  try {
    Napi::HandleScope scope(env);
    (*task)(Napi::Env(env));
  } catch (const Napi::Error&) {
    // JS can no longer run (a Worker's environment is stopping): nobody is left to observe the outcome.
  } catch (const std::exception& error) {
    std::fprintf(stderr, "nnstudio: an engine result could not be delivered to JS: %s\n", error.what());
  }
}

void EngineThreadJob::finalize(napi_env /*env*/, void* data, void* /*hint*/) {
  std::unique_ptr<EngineThreadJob> job(static_cast<EngineThreadJob*>(data));
  LiveJobs::instance().remove(job.get());
  job->stopAndJoin();  // at once after a normal end; within a step when the environment goes away
}

void EngineThreadJob::stopAndJoin() {
  stop();
  std::lock_guard<std::mutex> lock(joinMutex_);
  if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
}

}  // namespace nnstudio::addon
